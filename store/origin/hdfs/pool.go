// A pool of HDFS clients. A colinmarc/hdfs client sends one namenode call
// at a time over its connection (it holds a lock for each call and its
// answer), so one client would make every request of the node wait for
// the others' metadata round trips; the origin spreads calls over several.
// Reads take a client of their own (readers), as a data loader's worker
// has: their opens and block lookups never queue behind other calls, and
// the client's first datanode dial tells the read its block locations are
// in (conn.dialed).
package hdfs

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"
)

// defaultClients is Options.Clients' zero value.
const defaultClients = 16

// defaultReaders is Options.Readers' zero value.
const defaultReaders = 32

// conn is one client of the pool.
type conn struct {
	c *hdfsclient.Client
	// defaultsMu and defaultsOK guard the client's first fetch of the
	// server defaults: the client caches them on first use without a
	// lock (colinmarc/hdfs v2.4.0: Create and every datanode dial fetch
	// them), so concurrent first uses would race. After ready, they only
	// read them.
	defaultsMu sync.Mutex
	defaultsOK atomic.Bool
	// dialed, if set, is taken and called at the client's next datanode
	// dial, before it connects. Only a reader's client (held by one read
	// at a time) sets it.
	dialed atomic.Pointer[func()]
}

// pool holds the shared clients (conns, round robin) and the readers'
// (free: a client taken by one read until its reader is closed).
type pool struct {
	conns []*conn
	next  atomic.Uint64
	all   []*conn // conns and every reader's client, for close
	free  chan *conn
}

// newPool connects opts.Clients shared clients and opts.Readers readers'.
func newPool(opts Options) (*pool, error) {
	p := &pool{free: make(chan *conn, opts.Readers)}
	for i := range opts.Clients + opts.Readers {
		cn, err := newConn(opts)
		if err != nil {
			p.close()
			return nil, err
		}
		p.all = append(p.all, cn)
		if i < opts.Clients {
			p.conns = append(p.conns, cn)
		} else {
			p.free <- cn
		}
	}
	return p, nil
}

// newConn connects one client whose datanode dials call its dialed hook.
func newConn(opts Options) (*conn, error) {
	dial := (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	cn := &conn{}
	c, err := hdfsclient.NewClient(hdfsclient.ClientOptions{
		Addresses:           opts.Addresses,
		User:                opts.User,
		UseDatanodeHostname: opts.UseDatanodeHostname,
		NamenodeDialFunc:    dial,
		DatanodeDialFunc: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if fn := cn.dialed.Swap(nil); fn != nil {
				(*fn)()
			}
			return dial(ctx, network, addr)
		},
		KerberosClient:               opts.KerberosClient,
		KerberosServicePrincipleName: opts.KerberosServicePrincipalName,
		DataTransferProtection:       opts.DataTransferProtection,
	})
	if err != nil {
		return nil, err
	}
	cn.c = c
	return cn, nil
}

// take returns a reader's client for one read, waiting for one to be
// free until ctx ends; give it back with put.
func (p *pool) take(ctx context.Context) (*conn, error) {
	select {
	case cn := <-p.free:
		return cn, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put gives back a client take returned (its hook cleared).
func (p *pool) put(cn *conn) {
	cn.dialed.Store(nil)
	p.free <- cn
}

// pick returns the next client, round robin.
func (p *pool) pick() *conn {
	return p.conns[p.next.Add(1)%uint64(len(p.conns))]
}

// ready returns a shared client that has fetched the server defaults,
// for calls that use them (creates, datanode dials).
func (p *pool) ready() (*hdfsclient.Client, error) {
	cn := p.pick()
	if err := cn.fetchDefaults(); err != nil {
		return nil, err
	}
	return cn.c, nil
}

// fetchDefaults has the client fetch the server defaults once, before
// any use that would fetch them without a lock.
func (cn *conn) fetchDefaults() error {
	if cn.defaultsOK.Load() {
		return nil
	}
	cn.defaultsMu.Lock()
	defer cn.defaultsMu.Unlock()
	if !cn.defaultsOK.Load() {
		if _, err := cn.c.ServerDefaults(); err != nil {
			return err
		}
		cn.defaultsOK.Store(true)
	}
	return nil
}

func (p *pool) close() error {
	var errs []error
	for _, cn := range p.all {
		errs = append(errs, cn.c.Close())
	}
	return errors.Join(errs...)
}

// cl returns a client for a namenode call.
func (o *Origin) cl() *hdfsclient.Client { return o.pool.pick().c }
