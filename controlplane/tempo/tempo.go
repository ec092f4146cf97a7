package tempo

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The tempo object: a ConfigMap in kube-system.
const (
	Namespace = metav1.NamespaceSystem
	Name      = "glassplane-tempo"
)

// Mode is how components pace their actions.
type Mode string

const (
	// Realtime lets every action through at once (the default).
	Realtime Mode = "realtime"
	// Slow makes every action wait State.Delay first.
	Slow Mode = "slow"
	// Step makes every action wait for a released step.
	Step Mode = "step"
)

// Modes lists the modes in the order the dashboard offers them.
var Modes = []Mode{Realtime, Slow, Step}

// DefaultDelay is slow mode's wait when the object names none.
const DefaultDelay = 2 * time.Second

// MaxDelay bounds slow mode's wait.
const MaxDelay = 10 * time.Minute

// Keys of the ConfigMap's data.
const (
	KeyMode          = "mode"
	KeyDelay         = "delay"
	KeyReleased      = "released"
	KeyTaken         = "taken"
	KeyLastStep      = "lastStep"
	WaitingKeyPrefix = "waiting."
)

// State is the tempo as the ConfigMap holds it.
type State struct {
	Mode  Mode
	Delay time.Duration
	// Released counts the steps the presenter released; Taken those that
	// components claimed. Released > Taken means a step is free.
	Released, Taken int64
	// LastStep describes the action that took the last step.
	LastStep string
	// Waiting maps each waiting.* key to "component: action".
	Waiting map[string]string
}

// Default is the tempo of a cluster without the object.
func Default() State {
	return State{Mode: Realtime, Delay: DefaultDelay}
}

// FromConfigMap reads the tempo from cm; nil or unreadable fields read as
// their defaults, so a hand-edited object never stops the cluster.
func FromConfigMap(cm *corev1.ConfigMap) State {
	s := Default()
	if cm == nil {
		return s
	}
	if m := Mode(cm.Data[KeyMode]); slices.Contains(Modes, m) {
		s.Mode = m
	}
	if d, err := time.ParseDuration(cm.Data[KeyDelay]); err == nil && d >= 0 && d <= MaxDelay {
		s.Delay = d
	}
	s.Released, _ = strconv.ParseInt(cm.Data[KeyReleased], 10, 64)
	s.Taken, _ = strconv.ParseInt(cm.Data[KeyTaken], 10, 64)
	s.LastStep = cm.Data[KeyLastStep]
	for k, v := range cm.Data {
		if strings.HasPrefix(k, WaitingKeyPrefix) {
			if s.Waiting == nil {
				s.Waiting = map[string]string{}
			}
			s.Waiting[k] = v
		}
	}
	return s
}

// Free reports whether a released step is waiting to be claimed.
func (s State) Free() bool { return s.Released > s.Taken }

// WaitingActions lists what waits, sorted.
func (s State) WaitingActions() []string {
	return slices.Sorted(maps.Values(s.Waiting))
}

// Write stores s's mode, delay, counters and last step into cm's data,
// keeping the waiting.* keys as they are.
func (s State) Write(cm *corev1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[KeyMode] = string(s.Mode)
	cm.Data[KeyDelay] = s.Delay.String()
	cm.Data[KeyReleased] = strconv.FormatInt(s.Released, 10)
	cm.Data[KeyTaken] = strconv.FormatInt(s.Taken, 10)
	if s.LastStep != "" {
		cm.Data[KeyLastStep] = s.LastStep
	}
}

// NewConfigMap returns the tempo object holding s.
func NewConfigMap(s State) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Name, Labels: map[string]string{"app.kubernetes.io/part-of": "glassplane"}},
	}
	s.Write(cm)
	return cm
}

// ParseMode reads a mode and a delay as a user sends them, with
// Kubernetes-style field errors under data.
func ParseMode(mode, delay string) (Mode, time.Duration, field.ErrorList) {
	var errs field.ErrorList
	m := Mode(mode)
	if !slices.Contains(Modes, m) {
		errs = append(errs, field.NotSupported(field.NewPath("data", KeyMode), mode, []string{string(Realtime), string(Slow), string(Step)}))
	}
	d := DefaultDelay
	if delay != "" {
		var err error
		d, err = time.ParseDuration(delay)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath("data", KeyDelay), delay, "must be a duration such as 2s or 500ms"))
		case d < 0 || d > MaxDelay:
			errs = append(errs, field.Invalid(field.NewPath("data", KeyDelay), delay, fmt.Sprintf("must be between 0s and %s", MaxDelay)))
		}
	}
	return m, d, errs
}

// waitingKey is the data key listing one waiting action: valid as a
// ConfigMap key ([-._a-zA-Z0-9]+) and unique per gate and wait.
func waitingKey(component string, n uint64, action string) string {
	var b strings.Builder
	for _, r := range component {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%d\x00%s", component, n, action)
	name := b.String()
	if len(name) > 200 {
		name = name[:200]
	}
	return fmt.Sprintf("%s%s.%08x", WaitingKeyPrefix, name, h.Sum32())
}
