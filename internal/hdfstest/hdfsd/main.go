// Command hdfsd is the test HDFS cluster: one namenode and one datanode
// over a state directory, run as its own process so that its protocol
// packages (colinmarc/hdfs v1) never link beside the v2 client. It prints
// "hdfsd ready nn=HOST:PORT dn=HOST:PORT" once both listen and exits on
// SIGTERM or SIGINT. Test code only.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/granary-dev/granary/internal/hdfstest/blocks"
	"github.com/granary-dev/granary/internal/hdfstest/datanode"
	"github.com/granary-dev/granary/internal/hdfstest/namenode"
)

func main() {
	dir := flag.String("dir", "", "state directory (required)")
	nnAddr := flag.String("nn", "127.0.0.1:0", "namenode RPC listen address")
	dnAddr := flag.String("dn", "127.0.0.1:0", "datanode transfer listen address")
	dnAdvertise := flag.String("dn-advertise", "", "HOST:PORT the namenode gives clients for the datanode, e.g. a proxy in front of it (default: the datanode's listen address)")
	standby := flag.Bool("standby", false, "answer every call with StandbyException")
	safemode := flag.Bool("safemode", false, "fail mutations with SafeModeException")
	dirOwner := flag.String("user-dir-owner", "", `owner of directories without recorded metadata (default "hdfs")`)
	verbose := flag.Bool("v", false, "log failed calls to stderr")
	flag.Parse()
	if *dir == "" {
		log.Fatal("hdfsd: -dir is required")
	}
	if err := run(*dir, *nnAddr, *dnAddr, *dnAdvertise, *standby, *safemode, *dirOwner, *verbose); err != nil {
		log.Fatalf("hdfsd: %v", err)
	}
}

// run serves until a signal or a server failure. dnAdvertise, when not
// empty, is the datanode address block locations carry instead of the
// datanode's own listen address.
func run(dir, nnAddr, dnAddr, dnAdvertise string, standby, safemode bool, dirOwner string, verbose bool) error {
	logf := func(string, ...any) {}
	if verbose {
		logf = log.Printf
	}
	store, err := blocks.Open(filepath.Join(dir, "blocks"))
	if err != nil {
		return err
	}
	dnl, err := net.Listen("tcp", dnAddr)
	if err != nil {
		return err
	}
	defer dnl.Close()
	nnl, err := net.Listen("tcp", nnAddr)
	if err != nil {
		return err
	}
	defer nnl.Close()
	advertised := dnl.Addr().(*net.TCPAddr)
	if dnAdvertise != "" {
		if advertised, err = net.ResolveTCPAddr("tcp", dnAdvertise); err != nil {
			return fmt.Errorf("-dn-advertise: %w", err)
		}
	}
	nn, err := namenode.New(namenode.Options{
		Dir: dir, Store: store, DataNode: advertised,
		Standby: standby, SafeMode: safemode, DirOwner: dirOwner, Logf: logf,
	})
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs <- nn.Serve(nnl) }()
	go func() { defer wg.Done(); errs <- datanode.Serve(dnl, store, logf) }()
	fmt.Printf("hdfsd ready nn=%s dn=%s\n", nnl.Addr(), dnl.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var first error
	select {
	case <-sig:
	case first = <-errs: // a server stopped on its own
	}
	nnl.Close()
	dnl.Close()
	wg.Wait()
	return first
}
