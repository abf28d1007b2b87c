// The data set's shape: which objects `bench gen` writes, how many
// samples each holds and how large each sample is, decided up front from
// a seed so that a manifest describes the set exactly.
package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ManifestName is the object, under the data set's prefix, that
// describes it; gen writes it last, so its presence means the set is
// complete.
const ManifestName = "manifest.json"

// Manifest describes a generated data set.
type Manifest struct {
	Workload       string  `json:"workload"`
	Scale          float64 `json:"scale"` // applied to the sample sizes; train applies it to the compute time too
	SamplesPerFile int     `json:"samples_per_file"`
	Seed           uint64  `json:"seed"`
	Files          []File  `json:"files"`
}

// File is one object of the set: its key under the prefix and the size
// of each sample it packs, back to back.
type File struct {
	Key     string  `json:"key"`
	Samples []int64 `json:"samples"`
}

// Size is the object's length.
func (f File) Size() int64 {
	var n int64
	for _, s := range f.Samples {
		n += s
	}
	return n
}

// Sample locates one sample: a byte range of a file.
type Sample struct {
	File     int   // index in Manifest.Files
	Off, Len int64 // the range within the file
	Whole    bool  // the sample is the whole object (read without a range)
}

// Samples lists every sample of the set in file order.
func (m *Manifest) Samples() []Sample {
	var out []Sample
	for i, f := range m.Files {
		var off int64
		for _, n := range f.Samples {
			out = append(out, Sample{File: i, Off: off, Len: n, Whole: len(f.Samples) == 1})
			off += n
		}
	}
	return out
}

// Bytes is the size of the whole set.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size()
	}
	return n
}

// GenOptions shape a data set. Zero values take the workload's: Files,
// SamplesPerFile and Scale from its Small defaults, SampleBytes and
// SampleStdev from MLPerf's sizes times Scale; Seed 0 is a fixed seed.
type GenOptions struct {
	Profile        Profile
	Files          int
	SamplesPerFile int
	SampleBytes    int64
	SampleStdev    int64
	Scale          float64
	Seed           uint64
	Writers        int // objects written at once; 0: 8
}

// normalise fills the zero values (see GenOptions) and checks the rest.
func (o GenOptions) normalise() (GenOptions, error) {
	p := o.Profile
	if p.Name == "" {
		return o, errors.New("gen: no workload")
	}
	if o.Files == 0 {
		o.Files = p.Small.Files
	}
	if o.SamplesPerFile == 0 {
		o.SamplesPerFile = p.Small.SamplesPerFile
	}
	if o.Scale == 0 {
		o.Scale = p.Small.Scale
	}
	if o.SampleBytes == 0 {
		o.SampleBytes = int64(math.Round(float64(p.SampleBytes) * o.Scale))
	}
	if o.SampleStdev == 0 {
		o.SampleStdev = int64(math.Round(float64(p.SampleStdev) * o.Scale))
	}
	if o.Writers == 0 {
		o.Writers = 8
	}
	if o.Files < 1 || o.SamplesPerFile < 1 || o.SampleBytes < 1 || o.SampleStdev < 0 || o.Scale <= 0 || o.Writers < 1 {
		return o, fmt.Errorf("gen: files %d, samples per file %d, sample size %d, stdev %d, scale %g, writers %d: each must be positive",
			o.Files, o.SamplesPerFile, o.SampleBytes, o.SampleStdev, o.Scale, o.Writers)
	}
	return o, nil
}

// Layout decides the data set o describes: o.Files objects under
// train/, each of o.SamplesPerFile samples whose sizes follow a normal
// distribution (mean SampleBytes, deviation SampleStdev) clipped to
// [mean/16, mean+4 deviations], as DLIO draws them.
func Layout(o GenOptions) (Manifest, error) {
	o, err := o.normalise()
	if err != nil {
		return Manifest{}, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6772616e617279)) // "granary"
	lo := max(1, o.SampleBytes/16)
	hi := o.SampleBytes + 4*o.SampleStdev
	m := Manifest{Workload: o.Profile.Name, Scale: o.Scale, SamplesPerFile: o.SamplesPerFile, Seed: o.Seed,
		Files: make([]File, o.Files)}
	for i := range m.Files {
		f := File{Key: fmt.Sprintf("train/%06d.bin", i), Samples: make([]int64, o.SamplesPerFile)}
		for j := range f.Samples {
			n := o.SampleBytes + int64(math.Round(rng.NormFloat64()*float64(o.SampleStdev)))
			f.Samples[j] = min(max(n, lo), hi)
		}
		m.Files[i] = f
	}
	return m, nil
}

// ParseManifest reads a manifest and checks it describes samples.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest: %w", err)
	}
	if len(m.Files) == 0 || m.Scale <= 0 {
		return m, errors.New("manifest: no files, or no scale")
	}
	for _, f := range m.Files {
		if len(f.Samples) == 0 {
			return m, fmt.Errorf("manifest: %s has no samples", f.Key)
		}
	}
	return m, nil
}
