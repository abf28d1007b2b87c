// `granary bench`: MLPerf Storage-style benchmarks of any S3 endpoint (a
// Granary node or cluster, the origin itself, another cache): gen writes
// a workload-shaped data set, train runs simulated accelerators over it
// and reports accelerator utilisation (AU), ckpt saves and restores a
// sharded checkpoint. The work is in package bench.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/granary-dev/granary/bench"
)

func newBenchCmd(getenv Getenv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark an S3 endpoint in MLPerf Storage's terms (gen, train, ckpt)",
		Long: `Benchmark any S3 endpoint (a Granary node or cluster, the origin directly,
another cache) the way MLPerf Storage does: 'gen' writes a data set shaped
like a training workload (unet3d, resnet50, cosmoflow, retinanet), 'train'
runs simulated accelerators over it and reports their utilisation (AU: the
share of time spent computing rather than waiting for data) against the
workload's threshold, 'ckpt' saves and restores a sharded checkpoint.
Workload values come from MLPerf Storage's published configurations
(github.com/mlcommons/storage, configs/dlio/workload/); the defaults are
shrunk to run in about a minute, and every value has a flag.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBenchGenCmd(getenv), newBenchTrainCmd(getenv), newBenchCkptCmd(getenv))
	return cmd
}

// benchFlags are what every bench subcommand shares: the endpoint and
// --json.
type benchFlags struct {
	cf     clientFlags
	asJSON bool
}

func (b *benchFlags) register(fs *pflag.FlagSet) {
	b.cf.register(fs)
	fs.BoolVar(&b.asJSON, "json", false, "print the result as JSON on stdout (progress still goes to stderr)")
}

// store resolves s3://BUCKET/PREFIX on the endpoint into a bench.Store
// and the prefix, with idle connections for conns concurrent requests.
func (b *benchFlags) store(getenv Getenv, target string, conns int) (*bench.S3Store, string, error) {
	bucket, prefix, err := parseS3URL(target)
	if err != nil {
		return nil, "", usageError{err}
	}
	r, err := b.cf.Remote(getenv)
	if err != nil {
		return nil, "", usageError{err}
	}
	tr := r.transport()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = max(conns, 100), max(conns, 2)
	c, err := r.s3ClientOver(getenv, tr)
	if err != nil {
		return nil, "", usageError{err}
	}
	return &bench.S3Store{Client: c, Bucket: bucket}, prefix, nil
}

// spread is store over the endpoint and, if any, the others of also: each
// read goes to the next in turn (bench.Endpoints).
func (b *benchFlags) spread(getenv Getenv, target string, conns int, also []string) (bench.Store, error) {
	st, _, err := b.store(getenv, target, conns)
	if err != nil || len(also) == 0 {
		return st, err
	}
	all := &bench.Endpoints{Stores: []bench.Store{st}}
	for _, ep := range also {
		other := *b
		other.cf.endpoint = ep
		s, _, err := other.store(getenv, target, conns)
		if err != nil {
			return nil, err
		}
		all.Stores = append(all.Stores, s)
	}
	return all, nil
}

// report prints v as JSON, or its summary.
func (b *benchFlags) report(w io.Writer, v interface{ WriteSummary(io.Writer) }) error {
	if !b.asJSON {
		v.WriteSummary(w)
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newBenchGenCmd(getenv Getenv) *cobra.Command {
	var bf benchFlags
	var workload string
	var sampleSize, sampleStdev Size
	var o bench.GenOptions
	cmd := &cobra.Command{
		Use:   "gen s3://BUCKET/PREFIX/",
		Short: "Write a data set shaped like a training workload, with its manifest",
		Long: `Write a synthetic data set shaped like --workload under s3://BUCKET/PREFIX/
(the bucket is made if missing): --files objects of --samples-per-file
samples, sample sizes drawn around the workload's mean and deviation, then
PREFIX/manifest.json, which 'bench train' reads. The defaults are the
workload's MLPerf shapes shrunk to a laptop: --scale divides the sample
size (and, in train, the compute time, so each accelerator still asks for
MLPerf's bytes per second).`,
		Example: `  granary bench gen --endpoint http://127.0.0.1:9000 s3://bench/unet3d/
  granary bench gen --workload resnet50 --files 1024 --samples-per-file 1251 s3://bench/resnet50/`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := bench.Workload(workload)
			if err != nil {
				return usageError{err}
			}
			o.Profile, o.SampleBytes, o.SampleStdev = p, int64(sampleSize), int64(sampleStdev)
			st, prefix, err := bf.store(getenv, args[0], o.Writers*4)
			if err != nil {
				return err
			}
			if err := ensureBucket(cmd.Context(), st.Client, st.Bucket); err != nil {
				return err
			}
			var c bench.Counters
			start := time.Now()
			stop := startBenchProgress(cmd.ErrOrStderr(), func(el time.Duration) string {
				return fmt.Sprintf("gen %s: %d objects, %s, %s", p.Name, c.Objects.Load(), humanBytes(c.Bytes.Load()),
					humanRate(float64(c.Bytes.Load())/max(el.Seconds(), 0.001)))
			})
			m, err := bench.Gen(cmd.Context(), st, prefix, o, &c)
			stop()
			if err != nil {
				return err
			}
			return bf.report(cmd.OutOrStdout(), genReport{Target: args[0], Workload: m.Workload, Files: len(m.Files),
				Samples: len(m.Samples()), Bytes: m.Bytes(), Scale: m.Scale, Seconds: time.Since(start).Seconds()})
		},
	}
	fs := cmd.Flags()
	bf.register(fs)
	fs.StringVar(&workload, "workload", "unet3d", "workload: "+strings.Join(bench.Workloads(), ", "))
	fs.IntVar(&o.Files, "files", 0, "objects to write (default: the workload's small set)")
	fs.IntVar(&o.SamplesPerFile, "samples-per-file", 0, "samples packed in one object (default: the workload's small set)")
	fs.Var(sizeFlag{&sampleSize}, "sample-size", "mean sample size, e.g. 4MiB (default: the workload's times --scale)")
	fs.Var(sizeFlag{&sampleStdev}, "sample-stdev", "standard deviation of the sample size (default: the workload's times --scale)")
	fs.Float64Var(&o.Scale, "scale", 0, "divide MLPerf's sample size and compute time by 1/scale (default: the workload's small scale; 1 is MLPerf's sizes)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the sample sizes")
	fs.IntVar(&o.Writers, "writers", 8, "objects written at once")
	return cmd
}

// genReport is what gen prints.
type genReport struct {
	Target   string  `json:"target"`
	Workload string  `json:"workload"`
	Files    int     `json:"files"`
	Samples  int     `json:"samples"`
	Bytes    int64   `json:"bytes"`
	Scale    float64 `json:"scale"`
	Seconds  float64 `json:"seconds"`
}

func (g genReport) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "gen %s: a %s data set of %d objects, %d samples, %s (scale %g) in %.1fs\n", g.Target, g.Workload,
		g.Files, g.Samples, humanBytes(g.Bytes), g.Scale, g.Seconds)
}

// ensureBucket makes bucket unless it exists.
func ensureBucket(ctx context.Context, c *minio.Client, bucket string) error {
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if ok {
		return nil
	}
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("make bucket %s: %w", bucket, err)
	}
	return nil
}

func newBenchCkptCmd(getenv Getenv) *cobra.Command {
	var bf benchFlags
	var model string
	var size Size
	partSize := Size(16 << 20)
	var o bench.CkptOptions
	cmd := &cobra.Command{
		Use:   "ckpt s3://BUCKET/PREFIX/",
		Short: "Save and restore a sharded checkpoint of a named model size",
		Long: `Save a checkpoint of --model (MLPerf Storage's LLM checkpoint sizes) as one
object per rank under s3://BUCKET/PREFIX/ckpt/MODEL/ (multipart), all
ranks at once, then restore every shard the moment the save returns, as a
job resuming on the same storage would. Reports save and restore GB/s.
The default is a hundredth of the model's checkpoint over its ranks.`,
		Example: `  granary bench ckpt --endpoint http://127.0.0.1:9000 s3://bench/
  granary bench ckpt --model llama3-70b --ranks 8 --size 8GiB s3://bench/`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := bench.Model(model)
			if err != nil {
				return usageError{err}
			}
			o.Model, o.Bytes = m, int64(size)
			ranks := max(o.Ranks, m.Ranks)
			st, prefix, err := bf.store(getenv, args[0], ranks*4)
			if err != nil {
				return err
			}
			st.PartSize = uint64(partSize)
			if err := ensureBucket(cmd.Context(), st.Client, st.Bucket); err != nil {
				return err
			}
			var c bench.Counters
			stop := startBenchProgress(cmd.ErrOrStderr(), func(el time.Duration) string {
				return fmt.Sprintf("ckpt %s: %d shards moved, %s, %s", m.Name, c.Objects.Load(), humanBytes(c.Bytes.Load()),
					humanRate(float64(c.Bytes.Load())/max(el.Seconds(), 0.001)))
			})
			r, err := bench.Ckpt(cmd.Context(), st, prefix, o, &c)
			stop()
			if err != nil {
				return err
			}
			return bf.report(cmd.OutOrStdout(), r)
		},
	}
	fs := cmd.Flags()
	bf.register(fs)
	fs.StringVar(&model, "model", "llama3-8b", "model size: "+strings.Join(bench.Models(), ", "))
	fs.IntVar(&o.Ranks, "ranks", 0, "ranks, each saving its shard (default: MLPerf's process count for the model)")
	fs.Var(sizeFlag{&size}, "size", "whole checkpoint size over all ranks (default: the model's times --scale)")
	fs.Float64Var(&o.Scale, "scale", 0.01, "share of the model's checkpoint to write when --size is not given")
	fs.Var(sizeFlag{&partSize}, "part-size", "multipart part size")
	return cmd
}
