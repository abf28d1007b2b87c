// A pool of HDFS clients. A colinmarc/hdfs client sends one namenode call
// at a time over its connection (it holds a lock for each call and its
// answer), so one client would make every request of the node wait for
// the others' metadata round trips; the origin spreads calls over several.
package hdfs

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"
)

// defaultClients is Options.Clients' zero value.
const defaultClients = 16

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
}

type pool struct {
	conns []*conn
	next  atomic.Uint64
}

// newPool connects opts.Clients clients.
func newPool(opts Options) (*pool, error) {
	dial := (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	p := &pool{}
	for range opts.Clients {
		c, err := hdfsclient.NewClient(hdfsclient.ClientOptions{
			Addresses:                    opts.Addresses,
			User:                         opts.User,
			UseDatanodeHostname:          opts.UseDatanodeHostname,
			NamenodeDialFunc:             dial,
			DatanodeDialFunc:             dial,
			KerberosClient:               opts.KerberosClient,
			KerberosServicePrincipleName: opts.KerberosServicePrincipalName,
			DataTransferProtection:       opts.DataTransferProtection,
		})
		if err != nil {
			p.close()
			return nil, err
		}
		p.conns = append(p.conns, &conn{c: c})
	}
	return p, nil
}

// pick returns the next client, round robin.
func (p *pool) pick() *conn {
	return p.conns[p.next.Add(1)%uint64(len(p.conns))]
}

// ready returns a client that has fetched the server defaults, for
// calls that use them (creates, datanode dials).
func (p *pool) ready() (*hdfsclient.Client, error) {
	cn := p.pick()
	if cn.defaultsOK.Load() {
		return cn.c, nil
	}
	cn.defaultsMu.Lock()
	defer cn.defaultsMu.Unlock()
	if !cn.defaultsOK.Load() {
		if _, err := cn.c.ServerDefaults(); err != nil {
			return nil, err
		}
		cn.defaultsOK.Store(true)
	}
	return cn.c, nil
}

func (p *pool) close() error {
	var errs []error
	for _, cn := range p.conns {
		errs = append(errs, cn.c.Close())
	}
	return errors.Join(errs...)
}

// cl returns a client for a namenode call.
func (o *Origin) cl() *hdfsclient.Client { return o.pool.pick().c }
