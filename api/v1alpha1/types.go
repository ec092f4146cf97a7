package v1alpha1

import (
	"encoding/base64"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EtcdKey is one etcd key as the API server stores it, at one revision.
type EtcdKey struct {
	metav1.TypeMeta `json:",inline"`
	// metadata.name is the key as unpadded base64url (EtcdKeyName);
	// metadata.resourceVersion is the revision that wrote this value.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Key is the etcd key, e.g. /registry/pods/default/web.
	Key string `json:"key"`
	// CreateRevision is the etcd revision that created the key.
	CreateRevision int64 `json:"createRevision"`
	// ModRevision is the etcd revision of this value.
	ModRevision int64 `json:"modRevision"`
	// Version counts the writes since the key was created (1: created).
	Version int64 `json:"version"`
	// Size is the value's length in bytes.
	Size int64 `json:"size"`
	// Value is the value, on get and in history (not in lists).
	// +optional
	Value *EtcdValue `json:"value,omitempty"`
}

// EtcdValue is an etcd value with what could be read of it.
type EtcdValue struct {
	// Encoding is how the value is stored: "json", "protobuf" (Kubernetes'
	// protobuf envelope, "k8s\x00..."), "text" or "binary".
	Encoding string `json:"encoding"`
	// Object is the value as a JSON object: as stored when it is JSON,
	// decoded when it is a Kubernetes protobuf of a known kind.
	// +optional
	Object *runtime.RawExtension `json:"object,omitempty"`
	// Text is the value when it is text but not a JSON object.
	// +optional
	Text string `json:"text,omitempty"`
	// Raw is the stored bytes when they could not be read as an object or
	// text (base64 in JSON).
	// +optional
	Raw []byte `json:"raw,omitempty"`
	// Error says why a protobuf value could not be decoded.
	// +optional
	Error string `json:"error,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EtcdKeyList is a list of etcd keys: the keys under /registry/ at one
// revision, or one key's history, newest first.
type EtcdKeyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata.resourceVersion is the etcd revision the list was read at.
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdKey `json:"items"`
	// History says where a history walk stopped; set only on the history
	// subresource.
	// +optional
	History *EtcdHistoryEnd `json:"history,omitempty"`
}

// EtcdHistoryEnd says why a walk back through a key's revisions stopped.
type EtcdHistoryEnd struct {
	// CreatedAt is the revision that created the key, when the walk
	// reached it.
	// +optional
	CreatedAt int64 `json:"createdAt,omitempty"`
	// CompactedAt is the revision etcd no longer keeps, when the walk hit
	// it.
	// +optional
	CompactedAt int64 `json:"compactedAt,omitempty"`
	// Truncated is true when the walk stopped at its length limit.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// EtcdKeyName is the object name of an etcd key: the key as unpadded
// base64url.
func EtcdKeyName(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

// EtcdKeyOf returns the etcd key an EtcdKey name stands for.
func EtcdKeyOf(name string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(name)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("an etcdkeys name is the key as unpadded base64url: %q is not", name)
	}
	return string(b), nil
}
