package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// State is the content of .local/state.json: the processes this stack
// started and the addresses other tools read.
type State struct {
	Processes     map[string]ProcessState `json:"processes"`
	Kubeconfig    string                  `json:"kubeconfig,omitempty"`
	APIServerURL  string                  `json:"apiServerURL,omitempty"`
	PostgresURL   string                  `json:"postgresURL,omitempty"`
	PostgresAdmin string                  `json:"postgresAdminURL,omitempty"`
	PrometheusURL string                  `json:"prometheusURL,omitempty"`
	IssuerURL     string                  `json:"issuerURL,omitempty"`
	UpdatedAt     time.Time               `json:"updatedAt"`
}

// ReadState reads the state file; a missing file is an empty state.
func ReadState(l Layout) (State, error) {
	st := State{Processes: map[string]ProcessState{}}
	b, err := os.ReadFile(l.StateFile())
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parse %s: %w", l.StateFile(), err)
	}
	if st.Processes == nil {
		st.Processes = map[string]ProcessState{}
	}
	return st, nil
}

func writeState(l Layout, st State) error {
	st.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := l.StateFile() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, l.StateFile()); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// lock takes an exclusive lock on .local/lock so concurrent `up`/`down`
// calls (two test binaries, a developer and a test) do not race.
func lock(ctx context.Context, l Layout) (unlock func(), err error) {
	return lockFile(ctx, l, "lock")
}

// LockForTests takes the stack's test lock (.local/tests.lock), waiting for
// it as long as ctx allows: test binaries that use one stack hold it from
// their first use of the stack until they exit, so they run one at a time on
// that stack (they hold its finite GPUs, and some restart its API server or
// PostgreSQL) while the go tool builds and runs the others beside them.
func LockForTests(ctx context.Context, l Layout) (unlock func(), err error) {
	return lockFile(ctx, l, "tests.lock")
}

func lockFile(ctx context.Context, l Layout, name string) (unlock func(), err error) {
	if err := os.MkdirAll(l.Local(), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", l.Local(), err)
	}
	f, err := os.OpenFile(filepath.Join(l.Local(), name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for the stack lock: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
