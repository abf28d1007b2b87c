// XML documents of the S3 API (responses and request bodies) and the
// helpers that write and read them.
package api

import (
	"encoding/xml"
	"errors"
	"io"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
)

const (
	s3Namespace    = "http://s3.amazonaws.com/doc/2006-03-01/"
	contentTypeXML = "application/xml"
	// xmlTimeFormat is S3's timestamp format in XML bodies.
	xmlTimeFormat = "2006-01-02T15:04:05.000Z"
	// maxXMLBody bounds the XML request bodies Granary parses (a
	// DeleteObjects of 1,000 maximal, fully escaped keys fits).
	maxXMLBody = 8 << 20
)

func xmlTime(t time.Time) string { return t.UTC().Format(xmlTimeFormat) }

type ownerXML struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type bucketXML struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
}

type listAllMyBucketsResult struct {
	XMLName xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner   ownerXML    `xml:"Owner"`
	Buckets []bucketXML `xml:"Buckets>Bucket"`
}

type objectXML struct {
	Key          string    `xml:"Key"`
	LastModified string    `xml:"LastModified"`
	ETag         string    `xml:"ETag"`
	Size         int64     `xml:"Size"`
	Owner        *ownerXML `xml:"Owner,omitempty"`
	StorageClass string    `xml:"StorageClass"`
}

type prefixXML struct {
	Prefix string `xml:"Prefix"`
}

// listBucketResult is ListObjects (v1).
type listBucketResult struct {
	XMLName        xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string      `xml:"Name"`
	Prefix         string      `xml:"Prefix"`
	Marker         string      `xml:"Marker"`
	NextMarker     string      `xml:"NextMarker,omitempty"`
	MaxKeys        int         `xml:"MaxKeys"`
	Delimiter      string      `xml:"Delimiter,omitempty"`
	IsTruncated    bool        `xml:"IsTruncated"`
	Contents       []objectXML `xml:"Contents"`
	CommonPrefixes []prefixXML `xml:"CommonPrefixes"`
	EncodingType   string      `xml:"EncodingType,omitempty"`
}

// listBucketV2Result is ListObjectsV2.
type listBucketV2Result struct {
	XMLName               xml.Name    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string      `xml:"Name"`
	Prefix                string      `xml:"Prefix"`
	ContinuationToken     *string     `xml:"ContinuationToken,omitempty"` // nil: none was given
	NextContinuationToken string      `xml:"NextContinuationToken,omitempty"`
	StartAfter            string      `xml:"StartAfter,omitempty"`
	KeyCount              int         `xml:"KeyCount"`
	MaxKeys               int         `xml:"MaxKeys"`
	Delimiter             string      `xml:"Delimiter,omitempty"`
	IsTruncated           bool        `xml:"IsTruncated"`
	Contents              []objectXML `xml:"Contents"`
	CommonPrefixes        []prefixXML `xml:"CommonPrefixes"`
	EncodingType          string      `xml:"EncodingType,omitempty"`
}

type locationConstraintXML struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ LocationConstraint"`
	Location string   `xml:",chardata"`
}

type versioningConfigurationXML struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ VersioningConfiguration"`
}

type copyObjectResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyObjectResult"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
}

type deletedXML struct {
	Key string `xml:"Key"`
}

type deleteErrorXML struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

type deleteResult struct {
	XMLName xml.Name         `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []deletedXML     `xml:"Deleted"`
	Errors  []deleteErrorXML `xml:"Error"`
}

// createBucketConfiguration is the optional body of CreateBucket. A name
// without a namespace matches the element in any namespace.
type createBucketConfiguration struct {
	XMLName            xml.Name `xml:"CreateBucketConfiguration"`
	LocationConstraint string   `xml:"LocationConstraint"`
}

// deleteRequest is the body of DeleteObjects.
type deleteRequest struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   bool     `xml:"Quiet"`
	Objects []struct {
		Key       string `xml:"Key"`
		VersionID string `xml:"VersionId"`
	} `xml:"Object"`
}

// writeXML answers with status and v as an XML document.
func writeXML(c *fiber.Ctx, status int, v any) error {
	resp := c.Response()
	resp.ResetBody()
	w := resp.BodyWriter()
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	if err := xml.NewEncoder(w).Encode(v); err != nil {
		resp.ResetBody()
		return err
	}
	resp.SetStatusCode(status)
	resp.Header.SetContentType(contentTypeXML)
	return nil
}

// errBodyTooLarge marks an XML body over its limit.
var errBodyTooLarge = errors.New("api: XML body too large")

// readXMLBody reads a whole (small) request body. It reads to the end even
// when the body is empty, so the body's signature checks always run.
func readXMLBody(body io.Reader) ([]byte, error) {
	return readXMLBodyLimit(body, maxXMLBody)
}

// readXMLBodyLimit is readXMLBody for bodies of at most limit bytes.
func readXMLBodyLimit(body io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errBodyTooLarge
	}
	return data, nil
}

// decodeXMLBody reads body into v; a body that is empty, too large or not
// the expected document is MalformedXML.
func decodeXMLBody(body io.Reader, v any) error {
	return decodeXMLBodyLimit(body, v, maxXMLBody)
}

// decodeXMLBodyLimit is decodeXMLBody for bodies of at most limit bytes.
func decodeXMLBodyLimit(body io.Reader, v any, limit int64) error {
	data, err := readXMLBodyLimit(body, limit)
	if errors.Is(err, errBodyTooLarge) {
		return s3err.New(s3err.MalformedXML, "the XML body is too large")
	}
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return s3err.New(s3err.MalformedXML, "the request body is empty")
	}
	if err := xml.Unmarshal(data, v); err != nil {
		return s3err.New(s3err.MalformedXML, "")
	}
	return nil
}
