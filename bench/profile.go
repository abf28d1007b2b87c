// Package bench is `granary bench`: MLPerf Storage-style training and
// checkpoint workloads against any S3 endpoint, reported in the field's
// own currency, accelerator utilisation (AU). This file holds the
// workload profiles and checkpoint model sizes, taken from MLPerf
// Storage's published configurations.
package bench

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Profile is one training workload as MLPerf Storage defines it. The
// values are MLPerf's; Small holds the laptop-sized defaults.
//
// Sources (github.com/mlcommons/storage):
//
//	configs/dlio/workload/unet3d_{a100,h100}.yaml
//	configs/dlio/workload/resnet50_{a100,h100}.yaml
//	configs/dlio/workload/cosmoflow_{a100,h100}.yaml
//	configs/dlio/workload/retinanet_{a100,h100}.yaml
//
// (dataset.record_length_bytes and _stdev, num_samples_per_file,
// num_files_train, reader.batch_size and read_threads,
// train.computation_time per batch, metric.au).
type Profile struct {
	Name           string
	SampleBytes    int64                    // mean sample size
	SampleStdev    int64                    // standard deviation of the sample size
	SamplesPerFile int                      // samples packed in one object
	Files          int                      // objects in MLPerf's training set
	BatchSize      int                      // samples per batch per accelerator
	ReadThreads    int                      // DataLoader workers per accelerator
	Compute        map[string]time.Duration // per-batch compute time by accelerator type
	AUThreshold    float64                  // MLPerf's passing AU, 0..1
	Small          Small                    // what `granary bench` uses unless told otherwise
}

// Small shrinks a profile to finish in about a minute on a laptop. Scale
// divides both the sample size and the per-batch compute time, so each
// accelerator still asks for MLPerf's bytes per second of compute: the
// data set is smaller, the demand is the same.
type Small struct {
	Files          int
	SamplesPerFile int
	Scale          float64 // 0 < Scale <= 1
}

// profiles are the workloads by name.
var profiles = map[string]Profile{
	"unet3d": {
		Name: "unet3d", SampleBytes: 146600628, SampleStdev: 68341808, SamplesPerFile: 1, Files: 168,
		BatchSize: 7, ReadThreads: 4, AUThreshold: 0.90,
		Compute: map[string]time.Duration{"a100": 636 * time.Millisecond, "h100": 323 * time.Millisecond},
		Small:   Small{Files: 64, SamplesPerFile: 1, Scale: 1.0 / 32},
	},
	"resnet50": {
		Name: "resnet50", SampleBytes: 114660, SamplesPerFile: 1251, Files: 1024,
		BatchSize: 400, ReadThreads: 8, AUThreshold: 0.90,
		Compute: map[string]time.Duration{"a100": 435 * time.Millisecond, "h100": 224 * time.Millisecond},
		Small:   Small{Files: 32, SamplesPerFile: 100, Scale: 1},
	},
	"cosmoflow": {
		Name: "cosmoflow", SampleBytes: 2828486, SampleStdev: 71311, SamplesPerFile: 1, Files: 524288,
		BatchSize: 1, ReadThreads: 4, AUThreshold: 0.70,
		Compute: map[string]time.Duration{"a100": 5510 * time.Microsecond, "h100": 3500 * time.Microsecond},
		Small:   Small{Files: 128, SamplesPerFile: 1, Scale: 1},
	},
	"retinanet": {
		Name: "retinanet", SampleBytes: 153600, SampleStdev: 51200, SamplesPerFile: 1, Files: 1743042,
		BatchSize: 16, ReadThreads: 8, AUThreshold: 0.85,
		Compute: map[string]time.Duration{"a100": 210 * time.Millisecond, "h100": 180 * time.Millisecond},
		Small:   Small{Files: 2048, SamplesPerFile: 1, Scale: 1},
	},
}

// Workload returns the profile called name.
func Workload(name string) (Profile, error) {
	p, ok := profiles[strings.ToLower(name)]
	if !ok {
		return Profile{}, fmt.Errorf("unknown workload %q (have %s)", name, strings.Join(Workloads(), ", "))
	}
	return p, nil
}

// Workloads lists the profile names, sorted.
func Workloads() []string { return sortedKeys(profiles) }

// ComputeFor is the per-batch compute time on accelerator type acc.
func (p Profile) ComputeFor(acc string) (time.Duration, error) {
	d, ok := p.Compute[strings.ToLower(acc)]
	if !ok {
		return 0, fmt.Errorf("workload %s: unknown accelerator %q (have %s)", p.Name, acc, strings.Join(sortedKeys(p.Compute), ", "))
	}
	return d, nil
}

// CheckpointModel is one model of MLPerf Storage's checkpointing
// workload: its whole checkpoint and the ranks that write it (Table 2 of
// github.com/mlcommons/storage README.md, "Checkpointing").
type CheckpointModel struct {
	Name  string
	Bytes int64
	Ranks int
}

// checkpointModels are MLPerf's four checkpoint sizes.
var checkpointModels = map[string]CheckpointModel{
	"llama3-8b":   {Name: "llama3-8b", Bytes: 105e9, Ranks: 8},
	"llama3-70b":  {Name: "llama3-70b", Bytes: 912e9, Ranks: 64},
	"llama3-405b": {Name: "llama3-405b", Bytes: 5.29e12, Ranks: 512},
	"llama3-1t":   {Name: "llama3-1t", Bytes: 18e12, Ranks: 1024},
}

// Model returns the checkpoint model called name.
func Model(name string) (CheckpointModel, error) {
	m, ok := checkpointModels[strings.ToLower(name)]
	if !ok {
		return CheckpointModel{}, fmt.Errorf("unknown model %q (have %s)", name, strings.Join(Models(), ", "))
	}
	return m, nil
}

// Models lists the checkpoint model names, sorted.
func Models() []string { return sortedKeys(checkpointModels) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
