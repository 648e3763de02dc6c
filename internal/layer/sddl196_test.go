package layer

import (
	"bytes"
	"strings"
	"testing"
)

// The SDDL a layer gives in MSWINDOWS.sd becomes the descriptor go-winio
// makes of it: pallet's own two, written as SDDL, give the bytes pallet
// writes for them, and others read back as the SDDL they came as.
func TestSecurityDescriptorFromSDDL(t *testing.T) {
	for dir, sddl := range map[bool]string{true: DirectorySDDL, false: FileSDDL} {
		b, err := SecurityDescriptorFromSDDL(sddl)
		if err != nil {
			t.Fatalf("%s: %v", sddl, err)
		}
		if !bytes.Equal(b, SecurityDescriptor(dir)) {
			t.Errorf("%s: %x, want %x", sddl, b, SecurityDescriptor(dir))
		}
	}
	for _, tc := range []struct{ in, want string }{
		// As Windows prints System32's, TrustedInstaller written out.
		{"O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464G:SYD:PAI(A;;FA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;CIIO;GA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;;0x1301bf;;;SY)(A;OICIIO;GA;;;SY)(A;;0x1301bf;;;BA)(A;OICIIO;GA;;;BA)(A;;0x1200a9;;;BU)(A;OICIIO;GXGR;;;BU)(A;OICIIO;GA;;;CO)(A;;0x1200a9;;;AC)(A;OICIIO;GXGR;;;AC)",
			"O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464G:SYD:PAI(A;;FA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;CIIO;GA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;;0x1301bf;;;SY)(A;OICIIO;GA;;;SY)(A;;0x1301bf;;;BA)(A;OICIIO;GA;;;BA)(A;;0x1200a9;;;BU)(A;OICIIO;GRGX;;;BU)(A;OICIIO;GA;;;CO)(A;;0x1200a9;;;S-1-15-2-1)(A;OICIIO;GRGX;;;S-1-15-2-1)"},
		{"O:BAG:BAD:(D;;FA;;;WD)(A;ID;FR;;;AU)", "O:BAG:BAD:(D;;FA;;;WD)(A;ID;FR;;;AU)"},
		{"O:SYG:SYD:", "O:SYG:SYD:"},
		// Numbers as Windows reads them (wcstoul, base 0): decimal,
		// octal with a leading 0, hex.
		{"O:SYG:SYD:(A;;1179817;;;BU)(A;;04000000;;;BA)(A;;0X1F01FF;;;SY)", "O:SYG:SYD:(A;;0x1200a9;;;BU)(A;;0x100000;;;BA)(A;;FA;;;SY)"},
	} {
		b, err := SecurityDescriptorFromSDDL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		info, err := ParseSecurityDescriptor(b)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := info.SDDL(); got != tc.want {
			t.Errorf("%s:\nreads back as %s,\nwant         %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"O:DAG:DAD:(A;;FA;;;DA)", "names one SID on every machine"},
		{"O:BAG:SYD:(A;;FA;;;LA)", "names one SID on every machine"},
		{"O:BAG:SYD:(A;;FA;;;BA)S:(AU;SA;FA;;;WD)", "only an owner, a group and a DACL"},
		{"O:BAG:SYD:(OA;;CR;ab721a53-1e2f-11d0-9819-00aa0040529b;;WD)", "only allow (A) and deny (D)"},
		{"O:BAG:SYD:(A;;FA;;;BA", "ACE list"},
		{"O:BAG:SY", "want an owner, a group and a DACL"},
		{"O:BAG:SYD:(A;XX;FA;;;BA)", `flag "XX"`},
		{"O:BAG:SYD:(A;;QQ;;;BA)", `right "QQ"`},
		{"O:BAG:SYD:NO_ACCESS_CONTROL", "DACL flag"},
	} {
		if _, err := SecurityDescriptorFromSDDL(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}
