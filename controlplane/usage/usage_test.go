package usage

import (
	"testing"
	"time"
)

func TestCPURate(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		prev, cur  Sample
		wantMilli  int64
		wantWindow time.Duration
		wantOK     bool
	}{
		{"half a core over 15 s", Sample{t0, 1e9}, Sample{t0.Add(15 * time.Second), 1e9 + 7.5e9}, 500, 15 * time.Second, true},
		{"two cores over 1 s", Sample{t0, 0}, Sample{t0.Add(time.Second), 2e9}, 2000, time.Second, true},
		{"idle", Sample{t0, 5}, Sample{t0.Add(10 * time.Second), 5}, 0, 10 * time.Second, true},
		{"same time", Sample{t0, 0}, Sample{t0, 1e9}, 0, 0, false},
		{"counter went back (restart)", Sample{t0, 9e9}, Sample{t0.Add(time.Second), 1e9}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, w, ok := CPURate(tt.prev, tt.cur)
			if ok != tt.wantOK || w != tt.wantWindow || q.MilliValue() != tt.wantMilli {
				t.Fatalf("CPURate = %s (%dm), %s, %v; want %dm, %s, %v", q.String(), q.MilliValue(), w, ok, tt.wantMilli, tt.wantWindow, tt.wantOK)
			}
		})
	}
}

func TestParseSimulated(t *testing.T) {
	tests := []struct {
		in          string
		cpuM, memMi int64
		wantErr     bool
	}{
		{"cpu=250m,memory=64Mi", 250, 64, false},
		{" memory=1Gi ", 0, 1024, false},
		{"cpu=2", 2000, 0, false},
		{"", 0, 0, false},
		{"cpu", 0, 0, true},
		{"cpu=-1", 0, 0, true},
		{"gpu=1", 0, 0, true},
		{"cpu=lots", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseSimulated(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSimulated(%q) err = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && (u.CPU.MilliValue() != tt.cpuM || u.Memory.Value() != tt.memMi<<20) {
				t.Fatalf("ParseSimulated(%q) = cpu %s memory %s", tt.in, u.CPU.String(), u.Memory.String())
			}
		})
	}
}
