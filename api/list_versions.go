// ListObjectVersions (GET /bucket?versions) and PutBucketVersioning:
// Granary buckets are never versioned, so, as AWS answers for an
// unversioned bucket, each object is listed as its one current version
// with version id "null", paged by key-marker and version-id-marker.
package api

import (
	"encoding/xml"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
	"github.com/granary-dev/granary/store"
)

// nullVersion is the version id of an object in an unversioned bucket.
const nullVersion = "null"

type listVersionsResult struct {
	XMLName             xml.Name     `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListVersionsResult"`
	Name                string       `xml:"Name"`
	Prefix              string       `xml:"Prefix"`
	KeyMarker           string       `xml:"KeyMarker"`
	VersionIDMarker     string       `xml:"VersionIdMarker"`
	NextKeyMarker       string       `xml:"NextKeyMarker,omitempty"`
	NextVersionIDMarker string       `xml:"NextVersionIdMarker,omitempty"`
	MaxKeys             int          `xml:"MaxKeys"`
	Delimiter           string       `xml:"Delimiter,omitempty"`
	IsTruncated         bool         `xml:"IsTruncated"`
	Versions            []versionXML `xml:"Version"`
	CommonPrefixes      []prefixXML  `xml:"CommonPrefixes"`
	EncodingType        string       `xml:"EncodingType,omitempty"`
}

type versionXML struct {
	Key          string   `xml:"Key"`
	VersionID    string   `xml:"VersionId"`
	IsLatest     bool     `xml:"IsLatest"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	Size         int64    `xml:"Size"`
	Owner        ownerXML `xml:"Owner"`
	StorageClass string   `xml:"StorageClass"`
}

func (s buckets) listObjectVersions(c *fiber.Ctx, r *request) error {
	args := c.Request().URI().QueryArgs()
	q, err := parseListQuery(args)
	if err != nil {
		return err
	}
	keyMarker, versionMarker := queryValue(args, "key-marker"), queryValue(args, "version-id-marker")
	if err := checkListArg(keyMarker); err != nil {
		return err
	}
	switch {
	case versionMarker != "" && keyMarker == "":
		return s3err.New(s3err.InvalidArgument, "A version-id marker cannot be specified without a key marker.")
	case versionMarker != "" && versionMarker != nullVersion:
		return s3err.New(s3err.InvalidArgument, "Invalid version id specified")
	}
	// One version per key: what follows the marker's (null) version is
	// the next key, so the key marker is an exclusive cursor either way.
	page, err := s.page(r.ctx, r.bucket, q, keyMarker)
	if err != nil {
		return err
	}
	out := listVersionsResult{
		Name: r.bucket, Prefix: q.enc(q.prefix), KeyMarker: q.enc(keyMarker), VersionIDMarker: versionMarker,
		MaxKeys: q.maxKeys, Delimiter: q.enc(q.delimiter), IsTruncated: page.IsTruncated,
		Versions: q.versions(page.Objects, ownerOf(r)), CommonPrefixes: q.prefixes(page.CommonPrefixes),
	}
	if page.IsTruncated {
		out.NextKeyMarker, out.NextVersionIDMarker = q.enc(page.NextAfter), nullVersion
	}
	if q.urlEncode {
		out.EncodingType = "url"
	}
	return writeXML(c, http.StatusOK, out)
}

func (q listQuery) versions(objs []store.ObjectInfo, owner ownerXML) []versionXML {
	out := make([]versionXML, len(objs))
	for i, o := range objs {
		out[i] = versionXML{
			Key: q.enc(o.Key), VersionID: nullVersion, IsLatest: true, LastModified: xmlTime(o.LastModified),
			ETag: `"` + o.ETag + `"`, Size: o.Size, Owner: owner, StorageClass: "STANDARD",
		}
	}
	return out
}

// putBucketVersioning refuses to turn versioning on or to suspend it:
// Granary keeps one version of each object, as its origins do.
func (s buckets) putBucketVersioning(c *fiber.Ctx, r *request) error {
	var doc struct {
		Status string `xml:"Status"`
	}
	if err := decodeXMLBody(r.auth.Body, &doc); err != nil {
		return err
	}
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	switch doc.Status {
	case "Enabled", "Suspended":
		return s3err.New(s3err.NotImplemented, "Granary does not version objects: a bucket keeps one version of each key, so versioning cannot be "+doc.Status+".")
	}
	return s3err.New(s3err.MalformedXML, "VersioningConfiguration Status must be Enabled or Suspended")
}
