package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gantry-dev/gantry/internal/naming"
)

const indexService = "service"

// gantryEndpointSlices selects the slices of Gantry's Services (the slice
// controller copies a Service's labels onto its slices).
const gantryEndpointSlices = naming.LabelManagedBy + "=" + naming.ManagedBy

// EndpointCache is the read model of the EndpointSlices of Gantry's
// Services (the slice controller copies the Service's labels, so only
// slices labelled app.kubernetes.io/managed-by=gantry are watched): the
// portal's proxies pick a ready address from it, the way ingress
// controllers do, instead of relying on cluster DNS or kube-proxy.
type EndpointCache struct {
	factory informers.SharedInformerFactory
	slices  cache.SharedIndexInformer
}

// Endpoint is one address of a Service, with the port the proxy needs.
type Endpoint struct {
	Address string
	// Pod is the pod behind the address, when the slice names it.
	Pod string
	// Ready is the EndpointSlice's ready condition: the pod passes its
	// readiness probe and is not terminating.
	Ready       bool
	Terminating bool
	// Port is the named port's number on this address (0 when the slice
	// does not list it).
	Port int32
}

// NewEndpointCache sets up the EndpointSlice informer; call Start and WaitForSync.
func NewEndpointCache(kube kubernetes.Interface, resync time.Duration) (*EndpointCache, error) {
	f := informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = gantryEndpointSlices
	}))
	c := &EndpointCache{factory: f, slices: f.Discovery().V1().EndpointSlices().Informer()}
	if err := c.slices.AddIndexers(cache.Indexers{indexService: serviceIndex}); err != nil {
		return nil, fmt.Errorf("index endpoint slices by service: %w", err)
	}
	if err := c.slices.SetTransform(trimEndpointSlice); err != nil {
		return nil, fmt.Errorf("trim endpoint slices: %w", err)
	}
	return c, nil
}

// trimEndpointSlice keeps what picking an address needs: addresses,
// conditions, the pod's name and the ports.
func trimEndpointSlice(obj any) (any, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return trimObject(obj)
	}
	es.ManagedFields = nil
	es.Annotations = nil
	for i := range es.Endpoints {
		e := &es.Endpoints[i]
		e.Hints, e.DeprecatedTopology, e.Zone = nil, nil, nil
		if e.TargetRef != nil {
			e.TargetRef = &corev1.ObjectReference{Kind: e.TargetRef.Kind, Name: e.TargetRef.Name}
		}
	}
	return es, nil
}

func serviceIndex(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	svc := es.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil, nil
	}
	return []string{es.Namespace + "/" + svc}, nil
}

// Start runs the informer until ctx is cancelled. It does not block.
func (c *EndpointCache) Start(ctx context.Context) {
	c.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		c.factory.Shutdown()
	}()
}

// HasSynced reports whether the informer has completed its first list.
func (c *EndpointCache) HasSynced() bool { return c.slices.HasSynced() }

// WaitForSync blocks until the informer has listed once, or ctx ends.
func (c *EndpointCache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("wait for endpoint cache sync: %w", context.Cause(ctx))
	}
	return nil
}

// ServiceEndpoints returns the addresses of the Service's EndpointSlices
// (IPv4 and IPv6 slices alike), ready ones first, each with the number of
// the named port; none when the Service has no slice yet.
func (c *EndpointCache) ServiceEndpoints(namespace, service, portName string) ([]Endpoint, error) {
	if !c.HasSynced() {
		return nil, ErrNotSynced
	}
	objs, err := c.slices.GetIndexer().ByIndex(indexService, namespace+"/"+service)
	if err != nil {
		return nil, fmt.Errorf("endpoints of service %s/%s from cache: %w", namespace, service, err)
	}
	var out []Endpoint
	for _, es := range typed[*discoveryv1.EndpointSlice](objs) {
		var port int32
		for _, p := range es.Ports {
			if p.Port != nil && (p.Name == nil && portName == "" || p.Name != nil && *p.Name == portName) {
				port = *p.Port
			}
		}
		for _, e := range es.Endpoints {
			ep := Endpoint{Port: port,
				// A nil ready condition means ready (the API's own rule).
				Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating}
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				ep.Pod = e.TargetRef.Name
			}
			for _, a := range e.Addresses {
				ep.Address = a
				out = append(out, ep)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Endpoint) int {
		switch {
		case a.Ready == b.Ready:
			return 0
		case a.Ready:
			return -1
		}
		return 1
	})
	return out, nil
}
