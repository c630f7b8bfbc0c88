package devcluster

// PortalBuildArgs are the go command's arguments that build the gantry
// binary into out, as the Makefile and deploy/Containerfile build it:
// -tags nomsgpack leaves out gin's MessagePack binding (the ugorji codec,
// about 6 MB of the binary's mapped pages, most of them resident once
// loaded), which the portal never binds.
func PortalBuildArgs(out string) []string {
	return []string{"build", "-tags", "nomsgpack", "-o", out, "./cmd/gantry"}
}
