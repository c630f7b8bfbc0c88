package kube

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"github.com/gantry-dev/gantry/internal/servertiming"
)

// Clients bundles the typed clients Gantry uses against one API server.
type Clients struct {
	// Config is the configuration the clients were built from.
	Config *rest.Config
	// Kube is the core Kubernetes clientset.
	Kube kubernetes.Interface
	// Kueue is the generated clientset for Kueue's API groups.
	Kueue kueueclient.Interface
}

// RESTConfig loads a client configuration from the kubeconfig file at path,
// or from the pod's service account when path is empty.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("load in-cluster config: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// NewClients builds the core and Kueue clientsets for cfg. A call made for
// a page counts towards its Server-Timing.
func NewClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return servertiming.Transport(servertiming.Kube, rt) })
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build kubernetes client: %w", err)
	}
	kueue, err := kueueclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build kueue client: %w", err)
	}
	return &Clients{Config: cfg, Kube: kube, Kueue: kueue}, nil
}
