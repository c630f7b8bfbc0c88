package catalog

import corev1 "k8s.io/api/core/v1"

// mergeSecurityContext sets every field the template gives over the
// defaults, so what a template asks for is what policy sees.
func mergeSecurityContext(dst, src *corev1.SecurityContext) {
	if src == nil {
		return
	}
	if src.Privileged != nil {
		dst.Privileged = src.Privileged
	}
	if src.AllowPrivilegeEscalation != nil {
		dst.AllowPrivilegeEscalation = src.AllowPrivilegeEscalation
	}
	if src.RunAsNonRoot != nil {
		dst.RunAsNonRoot = src.RunAsNonRoot
	}
	if src.RunAsUser != nil {
		dst.RunAsUser = src.RunAsUser
	}
	if src.RunAsGroup != nil {
		dst.RunAsGroup = src.RunAsGroup
	}
	if src.Capabilities != nil {
		dst.Capabilities = src.Capabilities
	}
	if src.SeccompProfile != nil {
		dst.SeccompProfile = src.SeccompProfile
	}
	if src.ReadOnlyRootFilesystem != nil {
		dst.ReadOnlyRootFilesystem = src.ReadOnlyRootFilesystem
	}
}
