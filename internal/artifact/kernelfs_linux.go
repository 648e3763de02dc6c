package artifact

import "golang.org/x/sys/unix"

// The magic numbers of linux/magic.h that golang.org/x/sys/unix lacks.
const (
	configfsMagic = 0x62656570
	fusectlMagic  = 0x65735543
)

// kernelFS names the kernel's filesystem that p is on, if it is one whose
// files the kernel makes as they are read: their sizes say nothing, a read
// of /proc/kmsg waits for the next kernel message, one of tracefs's
// trace_pipe for the next event, and /proc/kcore is the size of the
// address space. A file that cannot be asked about is not one of them:
// the walk's own stat and open say what is wrong with it.
func kernelFS(p string) string {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return ""
	}
	switch uint32(st.Type) {
	case unix.PROC_SUPER_MAGIC:
		return "proc"
	case unix.SYSFS_MAGIC:
		return "sysfs"
	case unix.DEBUGFS_MAGIC:
		return "debugfs"
	case unix.TRACEFS_MAGIC:
		return "tracefs"
	case unix.SECURITYFS_MAGIC:
		return "securityfs"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "cgroup"
	case unix.BPF_FS_MAGIC:
		return "bpf"
	case configfsMagic:
		return "configfs"
	case unix.EFIVARFS_MAGIC:
		return "efivarfs"
	case unix.PSTOREFS_MAGIC:
		return "pstore"
	case fusectlMagic:
		return "fusectl"
	}
	return ""
}
