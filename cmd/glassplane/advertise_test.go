package main

import "testing"

func TestAdvertiseAddress(t *testing.T) {
	cases := []struct {
		name, flag, apiURL, want string
		wantErr                  bool
	}{
		{name: "the bound host", apiURL: "https://127.0.0.1:6443", want: "127.0.0.1:6443"},
		{name: "the flag, with the bound port", flag: "192.168.1.5", apiURL: "https://127.0.0.1:7443", want: "192.168.1.5:7443"},
		{name: "not an IPv4 flag", flag: "::1", apiURL: "https://127.0.0.1:6443", wantErr: true},
		{name: "a name as flag", flag: "localhost", apiURL: "https://127.0.0.1:6443", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := advertiseAddress(tc.flag, tc.apiURL)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Listening on every address advertises one of the host's, never the
	// unspecified one.
	got, err := advertiseAddress("", "https://0.0.0.0:6443")
	if err != nil || got.Addr().IsUnspecified() || got.Port() != 6443 {
		t.Errorf("unspecified host: got %s, %v", got, err)
	}
}
