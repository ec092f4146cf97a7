package rawjson

import "testing"

func TestEqual(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,"x"]}`, `{ "b" : [1, "x"], "a" : 1 }`, true},
		{`"A/"`, `"\u0041\/"`, true},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`1`, `1.0`, false},
		{`{"a":{"b":[true]}}`, `{"a":{"b":[false]}}`, false},
		{`null`, `null`, true},
		{`{}`, `[]`, false},
	} {
		if got := Equal([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestObjectMembersAndArrayElements(t *testing.T) {
	m, err := ObjectMembers([]byte(` {"a": [1, {"x":"}"}], "b\"": "s", "a": 2} `))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || string(m["a"]) != `2` || string(m[`b"`]) != `"s"` {
		t.Errorf("members %q", m)
	}
	e, err := ArrayElements([]byte(`[ {"a":"]"}, 3 ,"x"]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 3 || string(e[0]) != `{"a":"]"}` || string(e[1]) != `3` || string(e[2]) != `"x"` {
		t.Errorf("elements %q", e)
	}
	for _, bad := range []string{`[1,2`, `{"a":}`, `{"a" 1}`, `7`} {
		if _, err := ObjectMembers([]byte(bad)); err == nil {
			t.Errorf("ObjectMembers(%s) has no error", bad)
		}
	}
}
