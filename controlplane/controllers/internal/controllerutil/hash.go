package controllerutil

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/davecgh/go-spew/spew"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ComputeHash returns the pod-template-hash of template, salted with the
// collision count, as Kubernetes' controller.ComputeHash does: FNV-32a over
// a spew dump of the template, safe-encoded.
func ComputeHash(template *v1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	deepHashObject(h, *template)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func deepHashObject(h hash.Hash, obj any) {
	h.Reset()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", obj)
}
