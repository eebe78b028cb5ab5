package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The browser tests run Chromium in a network namespace of its own, whose only interface
// is its loopback: nothing it does can reach the host's network, not even the route
// lookups it makes by itself (its IPv6 reachability probe "connects" a UDP socket to a
// public address, and on the host that lookup alone made the kernel solicit its IPv6
// router: one packet on the outward interface, which make test-kind's capture counts).
// The page under test stays at the same address inside: a listener on the namespace's
// loopback, at the page's port, carries each connection over a Unix socket to a relay
// on the host that dials the real address.
//
// The namespace side is this test binary again (unshare --net <binary>), told what to do
// by netnsEnv; TestMain hands over to netnsMain before anything else.

// netnsEnv carries the namespace side's job, as JSON (netnsJob).
const netnsEnv = "E2E_NETNS_JOB"

// netnsJob is what the namespace side does: listen on Host:Port of its loopback (an
// address other than 127.0.0.1 is added to it), relay to Socket, and run Argv, passing
// its standard output through.
type netnsJob struct {
	Host   string   `json:"host"`
	Port   string   `json:"port"`
	Socket string   `json:"socket"`
	Argv   []string `json:"argv"`
}

// runIsolated runs argv in a new network namespace in which host:port (the page's
// address on the host) reaches the same address outside, and returns its standard
// output and error.
func runIsolated(ctx context.Context, dir, host, port string, argv []string) ([]byte, []byte, error) {
	if _, err := exec.LookPath("unshare"); err != nil {
		return nil, nil, fmt.Errorf("unshare (util-linux) is needed to isolate the browser: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(dir, "relay.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, nil, fmt.Errorf("relay socket: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close() // before the wait: it ends the relay
	wg.Add(1)
	go func() {
		defer wg.Done()
		relay(ln, func() (net.Conn, error) { return net.Dial("tcp", net.JoinHostPort(host, port)) })
	}()
	job, err := json.Marshal(netnsJob{Host: host, Port: port, Socket: sock, Argv: argv})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--", self, "-test.run=^$")
	cmd.Env = append(os.Environ(), netnsEnv+"="+string(job))
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, stderr.b, err
}

// netnsMain is the namespace side: it brings the loopback up, listens on the page's port
// and relays each connection to the host's Unix socket, and runs the job's command.
func netnsMain(raw string) int {
	var job netnsJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil || len(job.Argv) == 0 {
		fmt.Fprintln(os.Stderr, "netns: bad job:", raw, err)
		return 2
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "netns: loopback up: %v %s\n", err, out)
		return 2
	}
	addr := "127.0.0.1"
	if ip := net.ParseIP(job.Host); ip != nil && !ip.IsLoopback() {
		if out, err := exec.Command("ip", "addr", "add", ip.String(), "dev", "lo").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "netns: add %s to the loopback: %v %s\n", ip, err, out)
			return 2
		}
		addr = ip.String()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, job.Port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "netns: listen:", err)
		return 2
	}
	go relay(ln, func() (net.Conn, error) { return net.Dial("unix", job.Socket) })
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "netns:", err)
		return 2
	}
	return 0
}

// relay accepts connections on ln until it is closed and copies each, both ways, to a
// connection from dial.
func relay(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := dial()
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(out, in)
				closeWrite(out)
				close(done)
			}()
			_, _ = io.Copy(in, out)
			closeWrite(in)
			<-done
		}()
	}
}

// closeWrite half-closes a TCP or Unix connection, so that the other side sees the end.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// limitedBuffer keeps the first 64 KiB written to it (a browser's log can be long).
type limitedBuffer struct{ b []byte }

// Write keeps what fits and reports everything written.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
