package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL of the local stack: Debian's package, own data dir, loopback only.
const (
	postgresPort  = 55432
	postgresUser  = "postgres" // the Debian package's unprivileged account
	appDatabase   = "gantry"
	appRole       = "gantry"
	appPassword   = "gantry"
	postgresProcs = "postgres"
)

// PostgresAdminURL is the superuser DSN of the local PostgreSQL.
func PostgresAdminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", postgresPort)
}

// PostgresAppURL is the portal's DSN in the local PostgreSQL.
func PostgresAppURL() string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", appRole, appPassword, postgresPort, appDatabase)
}

func postgresComponent() component {
	return component{
		name:      "postgres",
		group:     GroupPostgres,
		processes: []string{postgresProcs},
		ports:     []int{postgresPort},
		healthy: func(ctx context.Context, s *Stack) error {
			if _, err := s.process(postgresProcs); err != nil {
				return err
			}
			return pingPostgres(ctx, PostgresAppURL())
		},
		start: startPostgres,
		// A fast shutdown (pg_ctl stop -m fast): open transactions are rolled
		// back and sessions ended at once. SIGTERM would wait for every client
		// to disconnect.
		shutdown: syscall.SIGINT,
	}
}

func pingPostgres(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

func postgresBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed: apt-get install postgresql")
}

func startPostgres(ctx context.Context, s *Stack) error {
	bin, err := postgresBinDir()
	if err != nil {
		return err
	}
	data := s.layout.Data("postgres")
	sock := filepath.Join(s.layout.Run(), "postgres")
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = postgresUser
	}
	for _, d := range []string{data, sock} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		if err := chownTo(d, runAs); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		s.progress("    initialising database cluster in %s", data)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
			"--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
		if runAs != "" {
			cred, err := credentialOf(runAs)
			if err != nil {
				return err
			}
			cmd.SysProcAttr = sysProcAttrWithCredential(cred)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("initdb: %w\n%s", err, out)
		}
	}
	// A postmaster.pid left by a killed server blocks the start; the
	// process check above proved no server of ours runs.
	_ = os.Remove(filepath.Join(data, "postmaster.pid"))
	ps, err := s.run(Process{
		Name: postgresProcs,
		Path: filepath.Join(bin, "postgres"),
		Args: []string{"-D", data, "-p", strconv.Itoa(postgresPort), "-k", sock,
			"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
			// Throwaway dev data: trade durability for speed.
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"},
		RunAs: runAs,
	})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, "PostgreSQL accepts connections", 60*time.Second, ps, func(ctx context.Context) error {
		return pingPostgres(ctx, PostgresAdminURL())
	}); err != nil {
		return err
	}
	if err := ensureAppDatabase(ctx); err != nil {
		return err
	}
	s.state.PostgresURL = PostgresAppURL()
	s.state.PostgresAdmin = PostgresAdminURL()
	return nil
}

func ensureAppDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, PostgresAdminURL())
	if err != nil {
		return fmt.Errorf("connect as superuser: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", appRole).Scan(&n); err != nil {
		return fmt.Errorf("look up role %s: %w", appRole, err)
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s'", appRole, appPassword)); err != nil {
			return fmt.Errorf("create role %s: %w", appRole, err)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", appDatabase).Scan(&n); err != nil {
		return fmt.Errorf("look up database %s: %w", appDatabase, err)
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", appDatabase, appRole)); err != nil {
			return fmt.Errorf("create database %s: %w", appDatabase, err)
		}
	}
	return nil
}

func chownTo(path, username string) error {
	if username == "" {
		return nil
	}
	u, err := user.Lookup(username)
	if err != nil {
		return fmt.Errorf("look up user %s: %w", username, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("chown %s to %s: %w", path, username, err)
	}
	return nil
}
