package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecretStringDataIsMergedIntoData: stringData is write-only, folded
// into data (winning over the same key), as Kubernetes stores it.
func TestSecretStringDataIsMergedIntoData(t *testing.T) {
	ns := shared.namespace(t)
	in := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"user": []byte("old"), "keep": []byte("k")},
		StringData: map[string]string{"user": "admin", "password": "hunter2"},
	}
	if _, err := shared.client.CoreV1().Secrets(ns).Create(ctxT(t), in, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := shared.client.CoreV1().Secrets(ns).Get(ctxT(t), "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"user": "admin", "password": "hunter2", "keep": "k"}
	if len(got.Data) != len(want) {
		t.Fatalf("data = %v, want %v", got.Data, want)
	}
	for k, v := range want {
		if string(got.Data[k]) != v {
			t.Errorf("data[%q] = %q, want %q", k, got.Data[k], v)
		}
	}
	if len(got.StringData) != 0 {
		t.Errorf("stringData was stored: %v", got.StringData)
	}
}
