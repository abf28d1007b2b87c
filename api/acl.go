// ACLs (GET and PUT ?acl on buckets and objects), answered as MinIO does:
// Granary keeps no ACLs (access is the access keys' grants), so every
// bucket and object has the one canned ACL "private", the owner's
// FULL_CONTROL. Reading it answers that grant; setting it to what it is
// (x-amz-acl: private, or a policy of that one grant) succeeds; any other
// canned ACL or grant is NotImplemented.
package api

import (
	"encoding/xml"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/granary-dev/granary/api/s3err"
)

// cannedPrivate is the only ACL Granary has.
const cannedPrivate = "private"

// fullControl is the permission of the one grant.
const fullControl = "FULL_CONTROL"

// accessControlPolicyXML is GetBucketAcl's and GetObjectAcl's answer and
// PutBucketAcl's and PutObjectAcl's body.
type accessControlPolicyXML struct {
	XMLName xml.Name   `xml:"http://s3.amazonaws.com/doc/2006-03-01/ AccessControlPolicy"`
	Owner   ownerXML   `xml:"Owner"`
	Grants  []grantXML `xml:"AccessControlList>Grant"`
}

type grantXML struct {
	Grantee    granteeXML `xml:"Grantee"`
	Permission string     `xml:"Permission"`
}

// granteeXML carries its type twice, as MinIO sends it: as the xsi:type
// attribute the S3 schema has, and as a Type element.
type granteeXML struct {
	XMLNS       string `xml:"xmlns:xsi,attr"`
	XSIType     string `xml:"xsi:type,attr"`
	Type        string `xml:"Type"`
	ID          string `xml:"ID,omitempty"`
	DisplayName string `xml:"DisplayName,omitempty"`
}

// privateACL is the owner's FULL_CONTROL, the owner being the caller.
func privateACL(r *request) accessControlPolicyXML {
	owner := ownerOf(r)
	return accessControlPolicyXML{Owner: owner, Grants: []grantXML{{
		Grantee: granteeXML{
			XMLNS: "http://www.w3.org/2001/XMLSchema-instance", XSIType: "CanonicalUser", Type: "CanonicalUser",
			ID: owner.ID, DisplayName: owner.DisplayName,
		},
		Permission: fullControl,
	}}}
}

func (s buckets) getBucketACL(c *fiber.Ctx, r *request) error {
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, privateACL(r))
}

func (s objects) getObjectACL(c *fiber.Ctx, r *request) error {
	if _, err := s.engine.Head(r.ctx, r.bucket, r.key); err != nil {
		return err
	}
	return writeXML(c, http.StatusOK, privateACL(r))
}

func (s buckets) putBucketACL(c *fiber.Ctx, r *request) error {
	if err := s.engine.HeadBucket(r.ctx, r.bucket); err != nil {
		return err
	}
	return acceptPrivateOnly(c, r)
}

func (s objects) putObjectACL(c *fiber.Ctx, r *request) error {
	if _, err := s.engine.Head(r.ctx, r.bucket, r.key); err != nil {
		return err
	}
	return acceptPrivateOnly(c, r)
}

// acceptPrivateOnly answers a PutBucketAcl or PutObjectAcl: 200 if it
// sets the ACL Granary has, NotImplemented for any other.
func acceptPrivateOnly(c *fiber.Ctx, r *request) error {
	h := &c.Request().Header
	if err := checkCannedACL(h.Peek("X-Amz-Acl")); err != nil {
		return err
	}
	if hasGrantHeaders(c) {
		return errOtherACL()
	}
	data, err := readXMLBody(r.auth.Body)
	if errors.Is(err, errBodyTooLarge) {
		return s3err.New(s3err.MalformedXML, "the XML body is too large")
	}
	if err != nil {
		return err
	}
	if len(h.Peek("X-Amz-Acl")) == 0 {
		if err := checkPolicyBody(data); err != nil {
			return err
		}
	}
	c.Response().SetStatusCode(http.StatusOK)
	return nil
}

// checkPolicyBody accepts an AccessControlPolicy of one FULL_CONTROL
// grant (the owner's: Granary has no other principal to grant to).
func checkPolicyBody(data []byte) error {
	if len(data) == 0 {
		return s3err.New(s3err.MissingSecurityHeader, "Your request was missing a required header: x-amz-acl, or an AccessControlPolicy body.")
	}
	var acl struct { // in any namespace: clients differ
		XMLName xml.Name `xml:"AccessControlPolicy"`
		Grants  []struct {
			Permission string `xml:"Permission"`
		} `xml:"AccessControlList>Grant"`
	}
	if err := xml.Unmarshal(data, &acl); err != nil {
		return s3err.New(s3err.MalformedXML, "")
	}
	if len(acl.Grants) != 1 || acl.Grants[0].Permission != fullControl {
		return errOtherACL()
	}
	return nil
}

// checkCannedACL accepts no x-amz-acl or "private", the ACL every bucket
// and object has. (CreateBucket and PutObject do not look at x-amz-acl.)
func checkCannedACL(v []byte) error {
	if len(v) == 0 || string(v) == cannedPrivate {
		return nil
	}
	return errOtherACL()
}

// hasGrantHeaders reports whether the request carries any
// x-amz-grant-* header (grants to other principals).
func hasGrantHeaders(c *fiber.Ctx) bool {
	h := &c.Request().Header
	for _, name := range []string{"X-Amz-Grant-Read", "X-Amz-Grant-Write", "X-Amz-Grant-Read-Acp",
		"X-Amz-Grant-Write-Acp", "X-Amz-Grant-Full-Control"} {
		if len(h.Peek(name)) > 0 {
			return true
		}
	}
	return false
}

func errOtherACL() error {
	return s3err.New(s3err.NotImplemented, "Granary keeps no ACLs: every bucket and object is private (its access is the access keys' grants); only the canned ACL private can be set.")
}
