// Tests of the data set's shape: the layout's sizes and counts, the
// objects gen writes and the manifest that describes them.
package bench

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

func TestLayoutShapes(t *testing.T) {
	unet, _ := Workload("unet3d")
	m, err := Layout(GenOptions{Profile: unet})
	if err != nil {
		t.Fatal(err)
	}
	// The small unet3d: 64 one-sample files, MLPerf's sizes over 32.
	mean, stdev := int64(146600628/32), int64(68341808/32)
	if len(m.Files) != 64 || m.SamplesPerFile != 1 || m.Scale != 1.0/32 || m.Workload != "unet3d" {
		t.Fatalf("manifest: %d files, %d per file, scale %v, %q", len(m.Files), m.SamplesPerFile, m.Scale, m.Workload)
	}
	keys := map[string]bool{}
	var sum int64
	for i, f := range m.Files {
		if want := fmt.Sprintf("train/%06d.bin", i); f.Key != want || keys[f.Key] {
			t.Fatalf("file %d: key %q, want %q once", i, f.Key, want)
		}
		keys[f.Key] = true
		if len(f.Samples) != 1 {
			t.Fatalf("%s: %d samples", f.Key, len(f.Samples))
		}
		if s := f.Samples[0]; s < mean/16 || s > mean+4*stdev {
			t.Fatalf("%s: sample of %d bytes outside [%d, %d]", f.Key, s, mean/16, mean+4*stdev)
		}
		sum += f.Size()
	}
	if got := sum / 64; got < mean*3/4 || got > mean*5/4 {
		t.Fatalf("mean sample %d bytes, want about %d", got, mean)
	}
	again, _ := Layout(GenOptions{Profile: unet})
	other, _ := Layout(GenOptions{Profile: unet, Seed: 7})
	if !reflect.DeepEqual(m, again) || reflect.DeepEqual(m.Files, other.Files) {
		t.Fatal("the layout is not a function of its seed")
	}

	// resnet50 packs samples: 32 files of 100, MLPerf's 114,660 bytes
	// each (it gives no deviation).
	res, _ := Workload("resnet50")
	m, err = Layout(GenOptions{Profile: res})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 32 || len(m.Samples()) != 3200 || m.Bytes() != 3200*114660 {
		t.Fatalf("resnet50: %d files, %d samples, %d bytes", len(m.Files), len(m.Samples()), m.Bytes())
	}
	// Flags override every dimension.
	m, _ = Layout(GenOptions{Profile: res, Files: 3, SamplesPerFile: 5, SampleBytes: 10})
	if len(m.Files) != 3 || len(m.Samples()) != 15 || m.Bytes() != 150 {
		t.Fatalf("overridden: %d files, %d samples, %d bytes", len(m.Files), len(m.Samples()), m.Bytes())
	}
	if _, err := Layout(GenOptions{Profile: res, Files: -1}); err == nil {
		t.Fatal("negative files accepted")
	}
}

func TestSamplesAreContiguousRanges(t *testing.T) {
	m := Manifest{Files: []File{{Key: "a", Samples: []int64{3, 4, 5}}, {Key: "b", Samples: []int64{9}}}}
	want := []Sample{{0, 0, 3, false}, {0, 3, 4, false}, {0, 7, 5, false}, {1, 0, 9, true}}
	if got := m.Samples(); !reflect.DeepEqual(got, want) {
		t.Fatalf("samples %+v, want %+v", got, want)
	}
}

func TestGenWritesTheSetThenItsManifest(t *testing.T) {
	st := newMemStore(nil, 0)
	res, _ := Workload("resnet50")
	var c Counters
	m, err := Gen(context.Background(), st, "/sets/r50", GenOptions{Profile: res, Files: 5, SamplesPerFile: 3, SampleBytes: 1000, Writers: 2}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.objs) != 6 || c.Objects.Load() != 5 || c.Bytes.Load() != 15000 {
		t.Fatalf("%d objects stored, counters %d objects %d bytes", len(st.objs), c.Objects.Load(), c.Bytes.Load())
	}
	for _, f := range m.Files {
		if b := st.objs["sets/r50/"+f.Key]; int64(len(b)) != f.Size() || f.Size() != 3000 {
			t.Fatalf("%s: %d bytes stored, manifest says %d", f.Key, len(b), f.Size())
		}
	}
	if string(st.objs["sets/r50/train/000000.bin"][:64]) == string(st.objs["sets/r50/train/000001.bin"][:64]) {
		t.Fatal("two objects start with the same bytes")
	}
	back, err := LoadManifest(context.Background(), st, "sets/r50")
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("manifest read back %+v, %v; wrote %+v", back, err, m)
	}
	if _, err := ParseManifest([]byte(`{"files":[]}`)); err == nil {
		t.Fatal("an empty manifest parsed")
	}
}

func TestPrefix(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a/", "/a/b/": "a/b/", "a/b": "a/b/"} {
		if got := Prefix(in); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", in, got, want)
		}
	}
}
