# Stand-in for Antrea's hack/windows/Install-OVS.ps1, which installs Open
# vSwitch on a Windows node. Upstream's image ships it at C:\k\antrea\ so
# that the agent's DaemonSet can run it; this one only says what it is.
Write-Output "Install-OVS.ps1 (stand-in): would install Open vSwitch from C:\openvswitch"
