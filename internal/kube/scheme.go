package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// NewScheme returns a scheme with the built-in Kubernetes types and Kueue's
// v1beta2 types, the version Kueue v0.17 stores and serves.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add core types to scheme: %w", err)
	}
	if err := kueuev1beta2.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add kueue v1beta2 types to scheme: %w", err)
	}
	return s, nil
}
