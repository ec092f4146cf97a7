package web

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// appliedSecret is a Secret as kubectl apply stores it: its values in data
// and, in plain text, in the last-applied-configuration annotation.
func appliedSecret(plain string) []byte {
	encoded := base64.StdEncoding.EncodeToString([]byte(plain))
	applied := `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{},"name":"creds","namespace":"default"},"stringData":{"password":"` + plain + `"},"data":{"token":"` + encoded + `"}}` + "\n"
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name": "creds", "namespace": "default",
			"annotations": map[string]any{lastAppliedAnnotation: applied, "team": "a"},
		},
		"data": map[string]any{"password": encoded, "token": encoded},
	}
	b, _ := json.Marshal(obj)
	return b
}

func TestMaskSecrets(t *testing.T) {
	const plain = "hunter2-7f3a9c"
	encoded := base64.StdEncoding.EncodeToString([]byte(plain))
	tests := []struct {
		name  string
		value []byte
		keep  []string
	}{
		{"applied Secret", appliedSecret(plain), []string{`"team":"a"`, `\"name\":\"creds\"`}},
		{"Secret with an annotation that is not JSON", []byte(`{"kind":"Secret","metadata":{"annotations":{"` + lastAppliedAnnotation + `":"password=` + plain + `"}},"stringData":{"p":"` + plain + `"}}`), nil},
		{"Secret without annotations", []byte(`{"kind":"Secret","metadata":{"name":"x"},"data":{"p":"` + encoded + `"}}`), []string{`"name":"x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := string(maskSecrets(tt.value))
			for _, secret := range []string{plain, encoded} {
				if strings.Contains(out, secret) {
					t.Errorf("the masked Secret still holds %q: %s", secret, out)
				}
			}
			for _, k := range tt.keep {
				if !strings.Contains(out, k) {
					t.Errorf("the masked Secret lost %s: %s", k, out)
				}
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(out), &obj); err != nil {
				t.Fatalf("the masked Secret is not JSON: %v", err)
			}
			ann := obj["metadata"].(map[string]any)["annotations"]
			if ann == nil {
				return
			}
			raw := ann.(map[string]any)[lastAppliedAnnotation].(string)
			if raw != maskedSecret && !json.Valid([]byte(raw)) {
				t.Errorf("the annotation is no longer JSON: %s", raw)
			}
		})
	}
	t.Run("other kinds are unchanged", func(t *testing.T) {
		cm := []byte(`{"kind":"ConfigMap","data":{"a":"b"}}`)
		if got := maskSecrets(cm); string(got) != string(cm) {
			t.Errorf("maskSecrets(ConfigMap) = %s", got)
		}
	})
}

// TestSecretsMaskedOnTheWay: the websocket's watch message and the apply
// form's dry-run fields mask an applied Secret too.
func TestSecretsMaskedOnTheWay(t *testing.T) {
	const plain = "hunter2-7f3a9c"
	encoded := base64.StdEncoding.EncodeToString([]byte(plain))
	value := appliedSecret(plain)
	msgs := storageMessages(source.Event{Type: source.EventPut, Key: storage.Key("secrets", "default", "creds"), Value: value, Revision: 3, Created: true}, time.Now())
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var submitted, stored map[string]any
	json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds"},"stringData":{"password":"`+plain+`"}}`), &submitted)
	json.Unmarshal(value, &stored)
	fields, err := json.Marshal(addedFields(submitted, stored))
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"watch message": string(b), "dry-run fields": string(fields)} {
		for _, secret := range []string{plain, encoded} {
			if strings.Contains(out, secret) {
				t.Errorf("the %s holds %q: %s", name, secret, out)
			}
		}
	}
	if !strings.Contains(string(fields), `"Path":"data"`) {
		t.Errorf("the dry-run fields no longer name what was added: %s", fields)
	}
}
