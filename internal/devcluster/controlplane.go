package devcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Loopback ports of the control plane.
const (
	etcdClientPort    = 23790
	etcdPeerPort      = 23800
	apiServerPort     = 6443
	kcmPort           = 10257
	schedulerPort     = 10259
	serviceClusterIPs = "10.96.0.0/16"
)

// Process names (and log names) of the control plane.
const (
	procEtcd      = "etcd"
	procAPIServer = "kube-apiserver"
	procKCM       = "kube-controller-manager"
	procScheduler = "kube-scheduler"
)

// APIServerURL is the local API server's address.
func APIServerURL() string { return fmt.Sprintf("https://127.0.0.1:%d", apiServerPort) }

func etcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", etcdClientPort) }

func etcdComponent() component {
	return component{
		name:      "etcd",
		group:     GroupCluster,
		processes: []string{procEtcd},
		ports:     []int{etcdClientPort, etcdPeerPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procEtcd); err != nil {
				return err
			}
			return httpOK(ctx, etcdURL()+"/health")
		},
		start: func(ctx context.Context, s *Stack) error {
			// Whatever ran against the old etcd must start over with the
			// new, empty one.
			for _, p := range []string{procKwok, procKueue, procScheduler, procKCM, procAPIServer} {
				if ps, ok := s.state.Processes[p]; ok {
					if err := stopProcess(ctx, p, ps, 10*time.Second); err != nil {
						return err
					}
					delete(s.state.Processes, p)
				}
			}
			data := s.layout.Data("etcd")
			// A fresh etcd starts an empty cluster: state left by an earlier
			// run (node leases held by a dead kwok, half-applied objects)
			// would only slow the start down or confuse it.
			if err := os.RemoveAll(data); err != nil {
				return fmt.Errorf("reset %s: %w", data, err)
			}
			if err := os.MkdirAll(data, 0o700); err != nil {
				return fmt.Errorf("create %s: %w", data, err)
			}
			peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
			ps, err := s.run(Process{
				Name: procEtcd,
				Path: s.bin(binEtcd),
				Args: []string{
					"--name=gantry-dev", "--data-dir=" + data,
					"--listen-client-urls=" + etcdURL(), "--advertise-client-urls=" + etcdURL(),
					"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
					"--initial-cluster=gantry-dev=" + peer,
					// Throwaway dev data: trade durability for speed.
					"--unsafe-no-fsync", "--snapshot-count=10000", "--log-level=warn",
				},
			})
			if err != nil {
				return err
			}
			return waitFor(ctx, "etcd is healthy", 30*time.Second, ps, func(ctx context.Context) error {
				return httpOK(ctx, etcdURL()+"/health")
			})
		},
	}
}

func apiServerComponent() component {
	return component{
		name:      "kube-apiserver",
		group:     GroupCluster,
		processes: []string{procAPIServer},
		ports:     []int{apiServerPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procAPIServer); err != nil {
				return err
			}
			return apiServerReady(ctx, s.layout)
		},
		start: startAPIServer,
	}
}

func startAPIServer(ctx context.Context, s *Stack) error {
	pki := func(f string) string { return filepath.Join(s.layout.PKI(), f) }
	ps, err := s.run(Process{
		Name: procAPIServer,
		Path: s.bin(binAPIServer),
		Args: []string{
			"--etcd-servers=" + etcdURL(),
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(apiServerPort),
			// No kube-proxy or endpoints here: the built-in endpoint
			// reconciler would only fight over the loopback address.
			"--endpoint-reconciler-type=none",
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction,PodSecurity,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy",
			"--allow-privileged=true",
			"--client-ca-file=" + pki("ca.crt"),
			"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + pki("sa.pub"),
			"--service-account-signing-key-file=" + pki("sa.key"),
			"--service-cluster-ip-range=" + serviceClusterIPs,
			// Front proxy: the aggregation layer in front of Kueue's
			// visibility API authenticates to it with this client cert.
			"--proxy-client-cert-file=" + pki("front-proxy-client.crt"),
			"--proxy-client-key-file=" + pki("front-proxy-client.key"),
			"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
			"--requestheader-allowed-names=" + frontProxyClientCN,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			// pods/log: the API server calls kwok's kubelet-like server at the
			// simulated node's InternalIP (127.0.0.1) and verifies its
			// serving certificate.
			"--kubelet-client-certificate=" + pki(apiServerKubeletClient.file+".crt"),
			"--kubelet-client-key=" + pki(apiServerKubeletClient.file+".key"),
			"--kubelet-certificate-authority=" + pki("ca.crt"),
			"--kubelet-preferred-address-types=InternalIP",
			// Go's profiles at /debug/pprof/ (cluster-admin only, as every
			// non-resource URL outside discovery): the load run takes the
			// API server's CPU profile beside the portal's to tell what it
			// does in the seconds that hold the slowest views.
			"--profiling=true",
			"--event-ttl=2h",
		},
	})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "API server ready", 90*time.Second, ps, func(ctx context.Context) error {
		return apiServerReady(ctx, s.layout)
	}); err != nil {
		return err
	}
	s.state.APIServerURL = APIServerURL()
	s.state.Kubeconfig = s.layout.Kubeconfig()
	return nil
}

// RESTConfig is the admin client configuration of the local cluster.
func RESTConfig(l Layout) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", l.Kubeconfig(), err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

func apiServerReady(ctx context.Context, l Layout) error {
	cfg, err := RESTConfig(l)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("API server client: %w", err)
	}
	body, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("API server /readyz: %w (%s)", err, body)
	}
	return nil
}

// healthzOK checks a component's /healthz on a self-signed loopback port.
func healthzOK(ctx context.Context, port int) error {
	client := &http.Client{Transport: &http.Transport{
		// The components serve /healthz with their own throwaway
		// self-signed certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func controllerManagerComponent() component {
	return component{
		name:      "controller-manager",
		group:     GroupCluster,
		processes: []string{procKCM},
		ports:     []int{kcmPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procKCM); err != nil {
				return err
			}
			return healthzOK(ctx, kcmPort)
		},
		start: func(ctx context.Context, s *Stack) error {
			pki := func(f string) string { return filepath.Join(s.layout.PKI(), f) }
			kc := s.componentKubeconfig("kube-controller-manager")
			ps, err := s.run(Process{
				Name: procKCM,
				Path: s.bin(binKCM),
				Args: []string{
					"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
					"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(kcmPort),
					"--leader-elect=false",
					// All default controllers, node lifecycle included: it
					// lifts the not-ready taint once kwok reports a node Ready.
					"--controllers=*",
					"--use-service-account-credentials",
					"--root-ca-file=" + pki("ca.crt"),
					"--service-account-private-key-file=" + pki("sa.key"),
					"--cluster-signing-cert-file=" + pki("ca.crt"), "--cluster-signing-key-file=" + pki("ca.key"),
					"--service-cluster-ip-range=" + serviceClusterIPs,
					"--allocate-node-cidrs=false",
					"--profiling=false",
					// The job controller creates each Job's pods and
					// counts them ready for Kueue; at the default 20
					// writes a second, 1,000 Jobs wait minutes.
					"--kube-api-qps=200", "--kube-api-burst=400",
				},
			})
			if err != nil {
				return err
			}
			return waitFor(ctx, "kube-controller-manager healthy", 60*time.Second, ps, func(ctx context.Context) error {
				return healthzOK(ctx, kcmPort)
			})
		},
	}
}

func schedulerComponent() component {
	return component{
		name:      "kube-scheduler",
		group:     GroupCluster,
		processes: []string{procScheduler},
		ports:     []int{schedulerPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procScheduler); err != nil {
				return err
			}
			return healthzOK(ctx, schedulerPort)
		},
		start: func(ctx context.Context, s *Stack) error {
			kc := s.componentKubeconfig("kube-scheduler")
			ps, err := s.run(Process{
				Name: procScheduler,
				Path: s.bin(binScheduler),
				Args: []string{
					"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
					"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedulerPort),
					"--leader-elect=false", "--profiling=false",
				},
			})
			if err != nil {
				return err
			}
			return waitFor(ctx, "kube-scheduler healthy", 60*time.Second, ps, func(ctx context.Context) error {
				return healthzOK(ctx, schedulerPort)
			})
		},
	}
}
