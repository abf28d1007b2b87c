// The hdfs-epochs scenario (issue 7, "Speed"): the epochs scenario's data
// set of small files stored on the test HDFS cluster (the hdfsd process,
// with a slow proxy in front of its namenode and another in front of its
// datanode), read for several epochs directly with the HDFS client and
// through `granary serve --origin hdfs://...`.
//
// The loadtest links the v2 client only: the test cluster's protocol
// packages (colinmarc/hdfs v1) register the same protobuf files, so the
// cluster runs as its own process, built from internal/hdfstest/hdfsd.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"

	"github.com/granary-dev/granary/internal/slowproxy"
)

// hdfsBase is the HDFS directory whose sub-directories are the gateway's
// buckets; the data set is the files of hdfsBase/epochsBucket/epochsPrefix.
const (
	hdfsBase = "/base"
	hdfsUser = "hdfs"
)

// cfgHDFSGateway is the gateway's configuration name in the report (the
// direct rows use cfgDirect, which the epochs report's table knows).
const cfgHDFSGateway = "gateway (hdfs:// origin), cache holds the data set"

// hdfsPlan is the shape of an hdfs-epochs run.
type hdfsPlan struct {
	epochsPlan       // files, fileSize, workers, and epochs through the gateway
	directEpochs int // epochs read directly (fewer than epochs when slow)
	seedWorkers  int // parallel writers of the data set, straight into HDFS
}

func fullHDFSPlan() hdfsPlan {
	return hdfsPlan{epochsPlan: epochsPlan{files: 10_000, fileSize: 100 << 10, workers: 16, epochs: 3},
		directEpochs: 2, seedWorkers: 8}
}

func quickHDFSPlan() hdfsPlan {
	return hdfsPlan{epochsPlan: epochsPlan{files: 2_000, fileSize: 100 << 10, workers: 16, epochs: 3},
		directEpochs: 3, seedWorkers: 8}
}

// hdfsPath is the HDFS file of o.
func hdfsPath(o object) string { return hdfsBase + "/" + epochsBucket + "/" + o.key }

// hdfsCluster is the test cluster with its two slow proxies.
type hdfsCluster struct {
	proc    *hdfsdProc
	nnProxy *slowproxy.Proxy // in front of the namenode
	dnProxy *slowproxy.Proxy // in front of the datanode; the address the namenode gives clients
}

// startHDFSCluster builds and starts hdfsd behind two proxies with link
// slow. The datanode's port is picked first so that its proxy exists
// before hdfsd starts and the namenode can advertise the proxy.
func startHDFSCluster(ctx context.Context, slow slowproxy.Options) (*hdfsCluster, error) {
	bin, cleanup, err := buildHDFSD(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup() // the running process keeps its open binary
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dn := fmt.Sprintf("127.0.0.1:%d", port)
	c := &hdfsCluster{}
	if c.dnProxy, err = slowproxy.Start(dn, slow); err != nil {
		return nil, err
	}
	if c.proc, err = startHDFSD(bin, "-dn", dn, "-dn-advertise", c.dnProxy.Addr()); err != nil {
		c.dnProxy.Close()
		return nil, err
	}
	if c.proc.dn != dn {
		c.close()
		return nil, fmt.Errorf("hdfsd: datanode listens on %s, want %s", c.proc.dn, dn)
	}
	if c.nnProxy, err = slowproxy.Start(c.proc.nn, slow); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *hdfsCluster) close() {
	if c.nnProxy != nil {
		c.nnProxy.Close()
	}
	c.proc.stop()
	c.dnProxy.Close()
}

// client returns an HDFS client through the proxies (slow) or straight
// to the cluster, with the datanode address the namenode advertises (the
// proxy's) redirected to the datanode itself.
func (c *hdfsCluster) client(slow bool) (*hdfsclient.Client, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	opts := hdfsclient.ClientOptions{Addresses: []string{c.nnProxy.Addr()}, User: hdfsUser,
		NamenodeDialFunc: d.DialContext, DatanodeDialFunc: d.DialContext}
	if !slow {
		opts.Addresses = []string{c.proc.nn}
		opts.DatanodeDialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == c.dnProxy.Addr() {
				addr = c.proc.dn
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	return hdfsclient.NewClient(opts)
}

// hdfsClientPool hands each of the direct readers its own client: one
// client sends its namenode calls one at a time over one connection, so
// a shared client would measure that lock rather than the link, whereas
// a data loader's workers are separate processes with a client each.
type hdfsClientPool chan *hdfsclient.Client

func newHDFSClientPool(c *hdfsCluster, n int) (hdfsClientPool, error) {
	p := make(hdfsClientPool, n)
	for range n {
		cl, err := c.client(true)
		if err != nil {
			p.close()
			return nil, err
		}
		p <- cl
	}
	return p, nil
}

// close closes the clients in the pool (all of them once every reader
// is done).
func (p hdfsClientPool) close() {
	for {
		select {
		case cl := <-p:
			cl.Close()
		default:
			return
		}
	}
}

// open is readRandom's opener: it takes a client for the file and gives
// it back when the file is closed. With as many clients as readers it
// never waits.
func (p hdfsClientPool) open(o object) (io.ReadCloser, error) {
	cl := <-p
	f, err := cl.Open(hdfsPath(o))
	if err != nil {
		p <- cl
		return nil, err
	}
	if err := f.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		f.Close()
		p <- cl
		return nil, err
	}
	return &pooledFile{FileReader: f, pool: p, cl: cl}, nil
}

// pooledFile returns its client to the pool on Close.
type pooledFile struct {
	*hdfsclient.FileReader
	pool hdfsClientPool
	cl   *hdfsclient.Client
}

func (f *pooledFile) Close() error {
	err := f.FileReader.Close()
	f.pool <- f.cl
	return err
}
