// The cluster scenario's relay floor: the peer-hop part's objects served
// by nginx from files, read directly and through a second nginx that
// relays the first (proxy_pass over kept connections, no cache), in
// the same run. A relay reads every byte from one socket and writes it to
// another on top of the work of the server it relays; what that costs
// nginx over a direct read is the least any node relaying a chunk pays,
// before it checks a byte or parses a header of its own.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/template"
	"time"
)

// The relay floor's rows, after the peer-hop rows of each set.
const (
	rowFloorDirect = "relay floor: nginx serving the objects from files"
	rowFloorRelay  = "relay floor: nginx relaying that nginx"
)

// The client indexes of the relay floor's two servers (after MinIO
// direct, directTarget).
var (
	floorDirectTarget = directTarget + 1
	floorRelayTarget  = directTarget + 2
)

// servedByNodes reports whether a row's reads go through the nodes, not
// MinIO or the relay floor's nginx.
func servedByNodes(row string) bool {
	return row != rowDirect && row != rowFloorDirect && row != rowFloorRelay
}

// relayFloor is two nginx processes: files serves the objects as files
// on tmpfs (root/<bucket>/<key>), relay relays files. Apart, each one's
// CPU is its own: relay's alone is what an entry node that owns nothing
// would pay at least. Pinned, they run on the first and second nodes'
// cores, as an owner and the node relaying it would.
type relayFloor struct {
	files, relay *nginxProc
}

// startRelayFloor writes every unit's bytes into files and starts nginx
// serving them, and another nginx relaying that one.
func startRelayFloor(units []hopUnit) (*relayFloor, error) {
	f := &relayFloor{}
	var err error
	f.files, err = launchNginx(false, pins.node(0), func(n *nginxProc) error {
		if err := n.makeDirs(); err != nil {
			return err
		}
		if err := writeUnits(filepath.Join(n.cache, clusterBucket), units); err != nil {
			return err
		}
		return n.writeConf(floorConf, floorData(n, pins.node(0), map[string]any{"Files": n.cache, "OpenFiles": openFiles(len(units))}))
	})
	if err != nil {
		return nil, fmt.Errorf("relay floor, file server: %w", err)
	}
	f.relay, err = launchNginx(false, pins.node(1), func(n *nginxProc) error {
		if err := n.makeDirs(); err != nil {
			return err
		}
		return n.writeConf(floorConf, floorData(n, pins.node(1), map[string]any{"Upstream": f.files.addr}))
	})
	if err != nil {
		f.files.stop()
		return nil, fmt.Errorf("relay floor, relay: %w", err)
	}
	return f, nil
}

// floorData is floorConf's data for n on cores: the settings both
// servers share, and the role's own (Files and OpenFiles, or Upstream).
func floorData(n *nginxProc, cores coreSet, role map[string]any) map[string]any {
	d := map[string]any{"Root": os.Geteuid() == 0, "Workers": nginxWorkers(cores), "NoFile": noFileLimit(),
		"Conns": workerConnections, "Dir": n.dir, "Addr": n.addr}
	for k, v := range role {
		d[k] = v
	}
	return d
}

// writeUnits writes each unit's bytes at its offset into dir/<key>.
func writeUnits(dir string, units []hopUnit) error {
	for _, u := range units {
		path := filepath.Join(dir, u.key)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(u.want, u.off)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cpu returns the run time of both servers' workers and of the relay's
// alone.
func (f *relayFloor) cpu() (both, relay time.Duration, err error) {
	files, err := sumOver(childrenOf(f.files.cmd.Process.Pid), procRunTime)
	if err != nil {
		return 0, 0, err
	}
	relay, err = sumOver(childrenOf(f.relay.cmd.Process.Pid), procRunTime)
	return files + relay, relay, err
}

func (f *relayFloor) stop() {
	f.relay.stop()
	f.files.stop()
}

// floorConf is a file server (Files set) as the reference configuration
// serves its cache (sendfile, open_file_cache, kept client connections),
// or a relay of Upstream as a user would tune a plain reverse proxy:
// upstream connections kept, answers buffered in memory (64 KiB buffers,
// never a temporary file), no cache.
var floorConf = template.Must(template.New("floor.conf").Parse(nginxHead + `{{- if .Files}}
	open_file_cache max={{.OpenFiles}} inactive=1h;
	open_file_cache_valid 1h;
	server {
		listen {{.Addr}} backlog=4096;
		root {{.Files}};
	}
{{- else}}
	upstream files {
		server {{.Upstream}};
		keepalive 128;
	}
	server {
		listen {{.Addr}} backlog=4096;
		location / {
			proxy_pass http://files;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering on;
			proxy_buffer_size 64k;
			proxy_buffers 8 64k;
			proxy_max_temp_file_size 0;
		}
	}
{{- end}}
}
`))
