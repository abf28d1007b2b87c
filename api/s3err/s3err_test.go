package s3err

import (
	"encoding/xml"
	"testing"
)

// TestMarshalMatchesEncodingXML: Marshal writes what encoding/xml makes of
// Body, for text that needs escaping too.
func TestMarshalMatchesEncodingXML(t *testing.T) {
	texts := []string{"", "plain", `a<b>&"c'`, "line\nbreak\ttab\rcr", "bad utf-8 \xff\xfe", "ctl \x01\x1f", "ünïcödé 🙂", "]]>"}
	for _, code := range []Code{NoSuchKey, TemporaryRedirect, Code("Origin's<Own>")} {
		for _, text := range texts {
			e := &Error{Code: code, Message: text, Region: text}
			got := Marshal(e, "bucket"+text, "key/"+text, "/r"+text, "id"+text)
			out, err := xml.Marshal(Body{Code: string(e.Code), Message: e.Description(), Region: e.Region,
				BucketName: "bucket" + text, Key: "key/" + text, Resource: "/r" + text, RequestID: "id" + text, HostID: "id" + text})
			if err != nil {
				t.Fatal(err)
			}
			if want := xml.Header + string(out); string(got) != want {
				t.Errorf("code %q text %q:\n got %s\nwant %s", code, text, got, want)
			}
		}
	}
	// The empty optional elements are left out, as omitempty does.
	got := string(Marshal(New(NoSuchKey, ""), "", "", "/", "id"))
	want := xml.Header + "<Error><Code>NoSuchKey</Code><Message>" + Description(NoSuchKey) +
		"</Message><Resource>/</Resource><RequestId>id</RequestId><HostId>id</HostId></Error>"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func BenchmarkMarshal(b *testing.B) {
	e := New(TemporaryRedirect, "")
	for b.Loop() {
		Marshal(e, "bucket", "some/key/of/an/object.tar", "/bucket/some/key/of/an/object.tar", "dc6n4ghksduck68g4kcg")
	}
}
