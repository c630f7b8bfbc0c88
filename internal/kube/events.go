package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gantry-dev/gantry/internal/naming"
)

// eventKinds are the involved objects whose events a job page shows: the
// workload objects, their Kueue Workloads and their pods.
var eventKinds = []string{"Job", "StatefulSet", "Deployment", "Pod", "Workload"}

// EventCache is an informer cache of the Events of team namespaces about
// jobs, their pods and their Kueue Workloads, indexed by involved object.
// Events of other namespaces and kinds are dropped before they are stored,
// so the cache does not grow with the rest of the cluster. Objects it
// returns are shared with the informer and must not be modified.
type EventCache struct {
	events cache.SharedIndexInformer
	// about files the events by involved object; filed tells whether it
	// has seen the informer's first list.
	about *keyIndex
	filed cache.ResourceEventHandlerRegistration
}

// NewEventCache sets up the Event informer; call Start and WaitForSync.
func NewEventCache(client kubernetes.Interface, resync time.Duration) (*EventCache, error) {
	events := client.CoreV1().Events(metav1.NamespaceAll)
	// Nodes are the busiest source of events that no job page shows.
	tweak := func(o *metav1.ListOptions) { o.FieldSelector = "involvedObject.kind!=Node" }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			list, err := events.List(ctx, o)
			if err != nil {
				return nil, err
			}
			list.Items = slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return !keepEvent(&e) })
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			w, err := events.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(in watch.Event) (watch.Event, bool) {
				// Bookmarks (which end a streamed initial list) and errors must pass.
				if in.Type == watch.Bookmark || in.Type == watch.Error {
					return in, true
				}
				e, ok := in.Object.(*corev1.Event)
				return in, !ok || keepEvent(e)
			}), nil
		},
	}
	// As generated informers do: a client that cannot stream its initial
	// list (a fake clientset) is listed, then watched.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Event{}, resync, cache.Indexers{})
	if err := inf.SetTransform(compactEvent); err != nil {
		return nil, fmt.Errorf("trim events: %w", err)
	}
	about := newKeyIndex(involvedObject)
	filed, err := inf.AddEventHandler(about.handler())
	if err != nil {
		return nil, fmt.Errorf("file events by involved object: %w", err)
	}
	return &EventCache{events: inf, about: about, filed: filed}, nil
}

// Start runs the informer until ctx is cancelled. It does not block.
func (c *EventCache) Start(ctx context.Context) {
	go c.events.RunWithContext(ctx)
}

// HasSynced reports whether the informer has completed its first list,
// and every event of it is filed by involved object.
func (c *EventCache) HasSynced() bool { return c.events.HasSynced() && c.filed.HasSynced() }

// WaitForSync blocks until the informer has listed once, or ctx ends.
func (c *EventCache) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("wait for event cache sync: %w", context.Cause(ctx))
	}
	return nil
}

// Event is what a job page reads of a Kubernetes Event, and all the event
// cache keeps of one. A team's namespaces hold a few events per job (the Job
// controller's, Kueue's Pending or Admitted, a pod's), so at 10,000 jobs the
// cache holds tens of thousands. A decoded corev1.Event is a 600-byte struct
// with a dozen strings of its own; this is a third of the struct, and its
// strings that repeat on every event (namespace, kind, type, reason) are one
// copy each, and so are the messages that do not name their object (the
// thousands of waiting Workloads' "couldn't assign flavors …" are a few
// distinct sentences); those that name it are kept as they came.
type Event struct {
	// Namespace, Name and ResourceVersion are the Event's own: the cache's
	// key and the informer's bookkeeping.
	Namespace, Name, ResourceVersion string
	// Kind, Object and ObjectNamespace name the object the event is about.
	Kind, Object, ObjectNamespace string
	Type, Reason, Message         string
	Count                         int32
	// LastSeen is when the event last happened: its series' or its own
	// last time, or when it was first recorded.
	LastSeen time.Time
}

// GetObjectMeta lets the informer key and version the compact event as it
// does an API object.
func (e *Event) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name, ResourceVersion: e.ResourceVersion}
}

// compactEvent is the event cache's transform: a decoded corev1.Event
// becomes an Event. Anything else (an Event already made compact, which a
// relist's tombstones pass through again) is kept as it is.
func compactEvent(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	objectNamespace := e.InvolvedObject.Namespace
	if objectNamespace == "" {
		objectNamespace = e.Namespace
	}
	return &Event{
		Namespace: intern(e.Namespace), Name: e.Name, ResourceVersion: e.ResourceVersion,
		Kind: intern(e.InvolvedObject.Kind), Object: e.InvolvedObject.Name, ObjectNamespace: intern(objectNamespace),
		Type: intern(e.Type), Reason: intern(e.Reason), Message: eventMessage(e),
		Count: e.Count, LastSeen: lastSeen(e),
	}, nil
}

// eventMessage is e's message, one copy shared by the events that say the
// same unless it names e's object (no other event would say it).
func eventMessage(e *corev1.Event) string {
	if e.InvolvedObject.Name != "" && strings.Contains(e.Message, e.InvolvedObject.Name) {
		return e.Message
	}
	return intern(e.Message)
}

// EventsAbout returns the events about the named object (kind is the
// object's kind: Job, Pod, Workload…), most recent first.
func (c *EventCache) EventsAbout(namespace, kind, name string) ([]*Event, error) {
	if !c.HasSynced() {
		return nil, ErrNotSynced
	}
	objs := c.about.objects(c.events.GetStore(), involvedKey(namespace, kind, name))
	out := make([]*Event, 0, len(objs))
	for _, o := range objs {
		if e, ok := o.(*Event); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *Event) int { return b.LastSeen.Compare(a.LastSeen) })
	return out, nil
}

// lastSeen is when an event last happened: its series' or its own last
// time, falling back to when it was first recorded.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// isTeamNamespace reports whether a namespace is a team's.
func isTeamNamespace(namespace string) bool {
	_, ok := naming.TeamOfNamespace(namespace)
	return ok
}

func keepEvent(e *corev1.Event) bool {
	return isTeamNamespace(e.Namespace) && slices.Contains(eventKinds, e.InvolvedObject.Kind)
}

func involvedKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// involvedObject is what EventCache.about files an event under.
func involvedObject(obj any) []string {
	e, ok := obj.(*Event)
	if !ok {
		return nil
	}
	return []string{involvedKey(e.ObjectNamespace, e.Kind, e.Object)}
}
