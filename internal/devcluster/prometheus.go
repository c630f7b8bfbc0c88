package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Prometheus of the local stack (Debian's package) scraping the DCGM
// metrics kwok simulates for pods on GPU nodes, and the container memory
// it simulates for every pod.
const (
	procPrometheus = "prometheus"
	prometheusPort = 9090
)

// PrometheusURL is the local Prometheus.
func PrometheusURL() string { return fmt.Sprintf("http://127.0.0.1:%d", prometheusPort) }

func prometheusComponent() component {
	return component{
		name:      "prometheus",
		group:     GroupPrometheus,
		processes: []string{procPrometheus},
		ports:     []int{prometheusPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(procPrometheus); err != nil {
				return err
			}
			if err := httpOK(ctx, PrometheusURL()+"/-/ready"); err != nil {
				return err
			}
			// Targets follow pools.yaml even when Prometheus is reused,
			// and so does its configuration (reloaded when it changed).
			if err := writeDCGMTargets(s); err != nil {
				return err
			}
			if err := writeKubeletTargets(s); err != nil {
				return err
			}
			changed, err := writePrometheusConfig(s)
			if err != nil {
				return err
			}
			if changed {
				if err := httpPost(ctx, PrometheusURL()+"/-/reload"); err != nil {
					return fmt.Errorf("reload prometheus configuration: %w", err)
				}
			}
			s.state.PrometheusURL = PrometheusURL()
			return nil
		},
		start: startPrometheus,
	}
}

func (s *Stack) dcgmTargetsFile() string {
	return filepath.Join(s.layout.Run(), "prometheus-dcgm-targets.json")
}

// addedDCGMTargetsFile is one file of the dcgm-added job's targets: it
// reads every prometheus-dcgm-added-*.json in the run folder, each the
// nodes a run added (the load run's).
func addedDCGMTargetsFile(l Layout, name string) string {
	return filepath.Join(l.Run(), "prometheus-dcgm-added-"+name+".json")
}

// WriteDCGMTargets has Prometheus scrape the DCGM series kwok simulates
// for the given extra nodes of a GPU pool (made with SimulatedNodes), from
// a targets file of their own named name; remove stops it. Prometheus reads
// the file within 5 s and scrapes those nodes every 15 s, as a production
// Prometheus scrapes dcgm-exporter (the stack's own nodes: every 5 s, so
// tests see a change sooner).
func WriteDCGMTargets(l Layout, name string, p Pool, nodes []string) (remove func() error, err error) {
	path := addedDCGMTargetsFile(l, name)
	if err := writeTargets(path, "DCGM", dcgmGroups(p, nodes)); err != nil {
		return nil, err
	}
	return func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove DCGM targets %s: %w", path, err)
		}
		return nil
	}, nil
}

// writeDCGMTargets lists each GPU node's kwok metrics path for Prometheus'
// file service discovery, with the labels dcgm-exporter puts on its series
// (Hostname, modelName).
func writeDCGMTargets(s *Stack) error {
	pools, err := s.pools()
	if err != nil {
		return err
	}
	groups := []targetGroup{}
	for _, p := range pools {
		groups = append(groups, dcgmGroups(p, p.NodeNames())...)
	}
	return writeTargets(s.dcgmTargetsFile(), "DCGM", groups)
}

// dcgmGroups are the DCGM targets of a pool's nodes; none for a pool
// without GPUs.
func dcgmGroups(p Pool, nodes []string) []targetGroup {
	if len(p.GPUResources()) == 0 {
		return nil
	}
	groups := make([]targetGroup, 0, len(nodes))
	for _, n := range nodes {
		groups = append(groups, targetGroup{
			Targets: []string{fmt.Sprintf("127.0.0.1:%d", kwokServerPort)},
			Labels: map[string]string{
				"__metrics_path__": dcgmMetricsPath(n),
				"Hostname":         n,
				"modelName":        p.Labels["nvidia.com/gpu.product"],
				"gantry_pool":      p.Name,
			},
		})
	}
	return groups
}

func (s *Stack) kubeletTargetsFile() string {
	return filepath.Join(s.layout.Run(), "prometheus-kubelet-targets.json")
}

// writeKubeletTargets lists every simulated node's kwok resource metrics
// path (container memory, as the kubelet serves at /metrics/resource).
func writeKubeletTargets(s *Stack) error {
	pools, err := s.pools()
	if err != nil {
		return err
	}
	groups := []targetGroup{}
	for _, p := range pools {
		for _, n := range p.NodeNames() {
			groups = append(groups, targetGroup{
				Targets: []string{fmt.Sprintf("127.0.0.1:%d", kwokServerPort)},
				Labels:  map[string]string{"__metrics_path__": resourceMetricsPath(n), "node": n, "gantry_pool": p.Name},
			})
		}
	}
	return writeTargets(s.kubeletTargetsFile(), "kubelet", groups)
}

// targetGroup is one group of Prometheus' file service discovery.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// writeTargets replaces a file service discovery file when its groups changed.
func writeTargets(path, what string, groups []targetGroup) error {
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s targets: %w", what, err)
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s targets: %w", what, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s targets: %w", what, err)
	}
	return nil
}

func (s *Stack) prometheusConfigFile() string { return filepath.Join(s.layout.Run(), "prometheus.yml") }

// writePrometheusConfig writes Prometheus' configuration; changed is false
// when the file already said the same.
func writePrometheusConfig(s *Stack) (changed bool, err error) {
	path := s.prometheusConfigFile()
	want := prometheusConfig(s.dcgmTargetsFile(), addedDCGMTargetsFile(s.layout, "*"), s.kubeletTargetsFile())
	if old, err := os.ReadFile(path); err == nil && string(old) == want {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("write prometheus config: %w", err)
	}
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		return false, fmt.Errorf("write prometheus config: %w", err)
	}
	return true, nil
}

func prometheusConfig(dcgmTargets, addedDCGMTargets, kubeletTargets string) string {
	return fmt.Sprintf(`# Generated by gantry-dev; regenerated on every up.
global:
  scrape_interval: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: dcgm
    file_sd_configs:
      - files: [%q]
        refresh_interval: 5s
  - job_name: dcgm-added
    scrape_interval: 15s
    file_sd_configs:
      - files: [%q]
        refresh_interval: 5s
  - job_name: kubelet
    file_sd_configs:
      - files: [%q]
        refresh_interval: 5s
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, dcgmTargets, addedDCGMTargets, kubeletTargets, prometheusPort)
}

func startPrometheus(ctx context.Context, s *Stack) error {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if _, statErr := os.Stat("/usr/bin/prometheus"); statErr != nil {
			return errors.New("prometheus is not installed: apt-get install prometheus")
		}
		bin = "/usr/bin/prometheus"
	}
	if err := writeDCGMTargets(s); err != nil {
		return err
	}
	if err := writeKubeletTargets(s); err != nil {
		return err
	}
	if _, err := writePrometheusConfig(s); err != nil {
		return err
	}
	config := s.prometheusConfigFile()
	data := s.layout.Data("prometheus")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", data, err)
	}
	ps, err := s.run(Process{
		Name: procPrometheus,
		Path: bin,
		Args: []string{
			"--config.file=" + config,
			"--storage.tsdb.path=" + data,
			"--storage.tsdb.retention.time=2d",
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", prometheusPort),
			"--web.enable-lifecycle",
			"--log.level=warn",
		},
	})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "Prometheus ready", 60*time.Second, ps, func(ctx context.Context) error {
		return httpOK(ctx, PrometheusURL()+"/-/ready")
	}); err != nil {
		return err
	}
	s.state.PrometheusURL = PrometheusURL()
	return nil
}
