package catalog_test

import (
	"testing"

	"github.com/gantry-dev/gantry/internal/catalog"
	"github.com/gantry-dev/gantry/internal/naming"
)

// FuzzRender feeds arbitrary form values through parsing and rendering of
// every seeded template: nothing may panic, and whatever parses must render.
func FuzzRender(f *testing.F) {
	ts := seeded(f)
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	f.Add(uint8(0), "h100", "1", "8", "64Gi", "1", "2", "60", "train.py", "c4-en", "abc123def4")
	f.Add(uint8(1), "mig-1g.10gb", "1", "500m", "16Gi", "0", "0", "0", "", "none", "zzzzzzzz")
	f.Add(uint8(2), "l40s", "-1", "1e3", "1Ei", "99999999999999999999", "x", "", "$(X) \x00", "", "ABC")
	f.Add(uint8(3), "", "08", "0.001", "1.5Gi", "4", "4", "4320", "--a=b", "llama-3.1-8b", "0123456789abcdefghij")
	f.Fuzz(func(t *testing.T, which uint8, gpuType, gpus, cpu, memory, replicas, nodes, minutes, args, choice, launchID string) {
		tpl := ts[names[int(which)%len(names)]]
		v, errs := tpl.ParseValues(map[string]string{
			naming.FieldGPUType: gpuType, naming.FieldGPUs: gpus, naming.FieldCPU: cpu, naming.FieldMemory: memory,
			naming.FieldReplicas: replicas, naming.FieldNodes: nodes, naming.FieldDurationMinutes: minutes,
			naming.FieldArgs: args, naming.FieldModel: choice, naming.FieldDataset: choice, naming.FieldCheckpoint: choice,
		})
		if len(errs) > 0 {
			for field, msg := range errs {
				if msg == "" {
					t.Fatalf("empty message for field %q", field)
				}
			}
			return
		}
		target := catalog.Target{Team: "vision", Namespace: "team-vision", Owner: gpuType, LaunchID: launchID, Queue: "default"}
		out, err := catalog.Render(&tpl, target, v)
		if catalog.ValidLaunchID(launchID) != (err == nil) {
			t.Fatalf("render with launch id %q: %v", launchID, err)
		}
		if err == nil && out.Workload == nil {
			t.Fatal("no workload rendered")
		}
	})
}
