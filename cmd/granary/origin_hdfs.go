// The HDFS origin: parsing hdfs://NN1:PORT[,NN2:PORT...]/BASE/PATH and
// opening it with the user and the optional Kerberos settings.
package main

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/rs/zerolog"

	"github.com/granary-dev/granary/store/origin/hdfs"
)

// defaultNamenodePort is the namenode RPC port when the URL gives none.
const defaultNamenodePort = "8020"

// parseHDFSOrigin parses hdfs://NN[:PORT][,NN[:PORT]...]/BASE: several
// namenodes for HA, and the directory whose sub-directories are buckets.
func parseHDFSOrigin(raw string) (originSpec, error) {
	rest, _ := strings.CutPrefix(raw, "hdfs://")
	hosts, base, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(base, "?#") {
		return originSpec{}, fmt.Errorf("origin: %q: an hdfs origin takes no query or fragment", raw)
	}
	spec := originSpec{Scheme: "hdfs", Base: path.Clean("/" + base)}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return originSpec{}, fmt.Errorf("origin: %q: empty namenode address; want hdfs://NN1:8020,NN2:8020/BASE", raw)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, defaultNamenodePort
		}
		if p, err := strconv.ParseUint(port, 10, 16); host == "" || err != nil || p == 0 {
			return originSpec{}, fmt.Errorf("origin: bad namenode address %q in %q", h, raw)
		}
		spec.Namenodes = append(spec.Namenodes, net.JoinHostPort(host, port))
	}
	return spec, nil
}

// openHDFS opens the HDFS origin spec names, as cfg's HDFS user or
// Kerberos principal.
func openHDFS(spec originSpec, cfg Config, log zerolog.Logger) (*hdfs.Origin, error) {
	opts := hdfs.Options{Addresses: spec.Namenodes, Base: spec.Base, User: cfg.HDFSUser,
		PartsDir: spec.PartsDir, KerberosServicePrincipalName: cfg.HDFSServicePrincipal,
		DataTransferProtection: cfg.HDFSDataProtection, Logger: log.With().Str("component", "hdfs").Logger()}
	if cfg.HDFSKeytab != "" {
		kc, err := kerberosClient(cfg)
		if err != nil {
			return nil, fmt.Errorf("origin: kerberos: %w", err)
		}
		opts.KerberosClient = kc
	}
	o, err := hdfs.New(opts)
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	return o, nil
}

// kerberosClient logs in as cfg's principal (user@REALM) from its keytab,
// with the krb5.conf cfg names. Not testable here (no KDC).
func kerberosClient(cfg Config) (*krbclient.Client, error) {
	user, realm, ok := strings.Cut(cfg.HDFSPrincipal, "@")
	if !ok || user == "" || realm == "" {
		return nil, errors.New("hdfs-principal: want user@REALM with hdfs-keytab")
	}
	kt, err := keytab.Load(cfg.HDFSKeytab)
	if err != nil {
		return nil, fmt.Errorf("hdfs-keytab: %w", err)
	}
	conf, err := krbconfig.Load(cfg.HDFSKrb5Conf)
	if err != nil {
		return nil, fmt.Errorf("hdfs-krb5-conf: %w", err)
	}
	kc := krbclient.NewWithKeytab(user, realm, kt, conf)
	if err := kc.Login(); err != nil {
		return nil, err
	}
	return kc, nil
}
