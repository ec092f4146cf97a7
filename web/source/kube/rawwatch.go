package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/web/source"
)

// A resource's watch is read as the API server's JSON stream, frame by
// frame, and an object's value is the bytes the server sent: client-go's
// dynamic watch decodes each object into maps and the store then encoded
// it again, which was most of the dashboard's cost of a change. Only the
// fields that place an object (kind, name, namespace, resourceVersion)
// are decoded. The stream is read with go-json-experiment's decoder (the
// one encoding/json/v2 comes from), which reads each frame in one pass:
// encoding/json scanned each object four times (the stream's value, the
// raw message, then validating and decoding the head), which was half of
// the dashboard's JSON work per change. It is as lenient as encoding/json:
// names in any case, duplicate names, invalid UTF-8.
var lenient = jsonv2.JoinOptions(jsonv2.MatchCaseInsensitiveNames(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// rawFrame is one event of a watch stream as the API sends it.
type rawFrame struct {
	Type   watch.EventType `json:"type"`
	Object jsontext.Value  `json:"object"`
}

// rawHead is what the store reads of a watched object.
type rawHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// resourcePath is the API path of t's resource: /api/v1/... for the core
// group, /apis/<group>/<version>/... for the others, in t's namespace when
// it has one.
func resourcePath(t target) string {
	gvr := t.res.GVR
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if t.namespace != "" {
		p = path.Join(p, "namespaces", url.PathEscape(t.namespace))
	}
	return path.Join(p, gvr.Resource)
}

// openRawWatch opens a watch of t from revision rev with bookmarks, which
// the server ends after timeout seconds.
func openRawWatch(ctx context.Context, rc rest.Interface, t target, rev, timeout int64) (io.ReadCloser, error) {
	return rc.Get().AbsPath(resourcePath(t)).
		Param("watch", "true").
		Param("resourceVersion", fmt.Sprint(rev)).
		Param("allowWatchBookmarks", "true").
		Param("timeoutSeconds", fmt.Sprint(timeout)).
		SetHeader("Accept", "application/json").
		Stream(ctx)
}

// rawDecoder reads the frames of a watch stream.
type rawDecoder struct {
	dec *jsontext.Decoder
	res *mapped
}

func newRawDecoder(r io.Reader, res *mapped) *rawDecoder {
	return &rawDecoder{dec: jsontext.NewDecoder(r, lenient), res: res}
}

// next returns the stream's next event. For an ERROR frame it returns the
// API's error; io.EOF when the server ended the stream. A BOOKMARK's
// change carries only its revision.
func (d *rawDecoder) next() (watch.EventType, change, error) {
	var f rawFrame
	if err := jsonv2.UnmarshalDecode(d.dec, &f, lenient); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The connection ended inside a frame: as a closed stream,
			// which the caller resumes from its last revision.
			return "", change{}, io.EOF
		}
		return "", change{}, err
	}
	switch f.Type {
	case watch.Error:
		var status metav1.Status
		if err := json.Unmarshal(f.Object, &status); err != nil {
			return f.Type, change{}, fmt.Errorf("a watch of %s sent an error that is not a Status: %w", d.res.GVR, err)
		}
		return f.Type, change{}, apierrors.FromObject(&status)
	case watch.Bookmark, watch.Added, watch.Modified, watch.Deleted:
	default:
		return f.Type, change{}, fmt.Errorf("a watch of %s sent an event of type %q", d.res.GVR, f.Type)
	}
	var head rawHead
	if err := jsonv2.Unmarshal(f.Object, &head, lenient); err != nil {
		return f.Type, change{}, fmt.Errorf("a watch of %s sent an object that is not one: %w", d.res.GVR, err)
	}
	rev, err := parseRevision(head.Metadata.ResourceVersion)
	if err != nil {
		return f.Type, change{}, fmt.Errorf("%s %s/%s: %w", d.res.Kind, head.Metadata.Namespace, head.Metadata.Name, err)
	}
	if f.Type == watch.Bookmark {
		return f.Type, change{modRevision: rev}, nil
	}
	value := []byte(f.Object)
	if head.Kind == "" || head.APIVersion == "" {
		// Servers send both in a watch; should one not, the value gets
		// them as a list's items do.
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(f.Object, &obj.Object); err != nil {
			return f.Type, change{}, fmt.Errorf("a watch of %s sent an object that is not one: %w", d.res.GVR, err)
		}
		kv, err := keyValue(d.res, obj)
		if err != nil {
			return f.Type, change{}, err
		}
		value = kv.Value
	}
	c := change{
		Event:       source.Event{Key: d.res.key(head.Metadata.Namespace, head.Metadata.Name), Value: value, Revision: rev},
		modRevision: rev,
	}
	if f.Type == watch.Deleted {
		c.Type = source.EventDelete
	} else {
		c.Type, c.Created = source.EventPut, f.Type == watch.Added
	}
	return f.Type, c, nil
}
