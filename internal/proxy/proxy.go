// Package proxy is the domain side of opening jobs from the portal: which
// address a notebook or inference endpoint is reached at (a ready address
// of its Service's EndpointSlices, as ingress controllers pick one), why it
// cannot be reached now in a sentence, who may open a notebook (its owner,
// or its team once the owner shares it), endpoint keys, and what endpoints
// serve (request count, errors, latency, tokens). The HTTP proxying itself
// is the web layer's.
package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/kube"
	"github.com/gantry-dev/gantry/internal/queue"
)

// PortName is the name of the Service port the templates render for a
// notebook's or endpoint's server.
const PortName = "http"

// Reason says why a job cannot be opened now.
type Reason string

// Reasons a job cannot be opened.
const (
	ReasonStarting       Reason = "starting"
	ReasonStopped        Reason = "stopped"
	ReasonNoReadyReplica Reason = "no-ready-replica"
	ReasonEnded          Reason = "ended"
	ReasonNotServed      Reason = "not-served"
)

// Unavailable is a job that cannot be opened now, with the sentence the
// person (or script) reads and, for a stopped notebook, that Resume helps.
type Unavailable struct {
	Reason Reason
	Words  string
	// Resumable marks a stopped notebook: its page offers Resume.
	Resumable bool
}

func (u *Unavailable) Error() string { return u.Words }

// ErrUnavailable matches every *Unavailable with errors.Is.
var ErrUnavailable = errors.New("job cannot be opened now")

// Is makes errors.Is(err, ErrUnavailable) hold.
func (u *Unavailable) Is(target error) bool { return target == ErrUnavailable }

// Endpoints reads a Service's addresses from the informer cache.
type Endpoints interface {
	ServiceEndpoints(namespace, service, portName string) ([]kube.Endpoint, error)
}

// Job is what choosing an address needs to know of a job.
type Job struct {
	Kind      catalog.Kind
	Namespace string
	// Service is the Service the template renders (named like the job).
	Service string
	Phase   queue.Phase
}

func noun(k catalog.Kind) string {
	if k == catalog.KindInference {
		return "endpoint"
	}
	return "notebook"
}

// Target returns the base URL of a ready address of the job's Service, or
// an *Unavailable saying why there is none.
func Target(eps Endpoints, j Job) (*url.URL, error) {
	what := noun(j.Kind)
	switch j.Phase {
	case queue.PhaseStopped:
		return nil, &Unavailable{Reason: ReasonStopped, Resumable: j.Kind == catalog.KindNotebook,
			Words: fmt.Sprintf("The %s is stopped: its workspace is kept. Resume it to open it again.", what)}
	case queue.PhaseQueued, queue.PhaseQuotaReserved, queue.PhaseAdmitted, queue.PhaseCreating:
		return nil, &Unavailable{Reason: ReasonStarting,
			Words: fmt.Sprintf("The %s is starting (%s): it opens here once its server is ready.", what, j.Phase)}
	case queue.PhaseSucceeded, queue.PhaseFailed, queue.PhasePreempted, queue.PhaseEvicted, queue.PhaseDeleted:
		return nil, &Unavailable{Reason: ReasonEnded,
			Words: fmt.Sprintf("The %s has ended (%s): there is nothing to open. Its page says why.", what, j.Phase)}
	}
	if j.Kind != catalog.KindNotebook && j.Kind != catalog.KindInference {
		return nil, &Unavailable{Reason: ReasonNotServed, Words: "Only notebooks and inference endpoints can be opened from the portal."}
	}
	all, err := eps.ServiceEndpoints(j.Namespace, j.Service, PortName)
	if err != nil {
		return nil, fmt.Errorf("open %s/%s: %w", j.Namespace, j.Service, err)
	}
	for _, e := range all {
		if e.Ready && !e.Terminating && e.Port != 0 {
			return &url.URL{Scheme: "http", Host: net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))}, nil
		}
	}
	if j.Kind == catalog.KindInference {
		return nil, &Unavailable{Reason: ReasonNoReadyReplica,
			Words: "The endpoint has no ready replica: no pod of it passes its readiness check yet. Its page shows its pods."}
	}
	if len(all) > 0 {
		return nil, &Unavailable{Reason: ReasonStarting,
			Words: "The notebook is starting: its pod runs but its server does not answer its readiness check yet."}
	}
	return nil, &Unavailable{Reason: ReasonStarting,
		Words: "The notebook is starting: its server has no ready address yet."}
}
