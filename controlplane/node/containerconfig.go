package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// podDirRuntime is a runtime that keeps per-pod files on the node, where
// the agent materializes the pod's volumes.
type podDirRuntime interface {
	PodDir(podUID string) string
}

// Default file modes of projected files, as the API defaults them.
const (
	defaultVolumeFileMode = 0o644
	defaultTokenExpiry    = 3607
)

// resolveEnv builds a container's environment as kubelet does: envFrom
// sources first, then env entries (literal values and valueFrom), later
// names overriding earlier ones, then the pod's service variables
// (podServiceEnv, sorted) that none of those set. $(NAME) in a value sees
// the variables before it and then the service variables. A missing
// non-optional source is an error kubelet reports as
// CreateContainerConfigError.
func (a *Agent) resolveEnv(ctx context.Context, w *podWorker, pod *corev1.Pod, c corev1.Container) ([]string, error) {
	serviceEnv, err := a.podServiceEnv(pod)
	if err != nil {
		return nil, err
	}
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.ConfigMapRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ptr.Deref(src.ConfigMapRef.Optional, false) {
				continue
			}
			if err != nil {
				return nil, sourceError("configmap", src.ConfigMapRef.Name, err)
			}
			// Every key, prefixed, as the kubelet does since environment
			// variable names were relaxed (any printable ASCII but '=').
			for k, v := range cm.Data {
				set(src.Prefix+k, v)
			}
		case src.SecretRef != nil:
			sec, err := a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, src.SecretRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ptr.Deref(src.SecretRef.Optional, false) {
				continue
			}
			if err != nil {
				return nil, sourceError("secret", src.SecretRef.Name, err)
			}
			for k, v := range sec.Data {
				set(src.Prefix+k, string(v))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandEnv(e.Value, vals, serviceEnv))
			continue
		}
		switch f := e.ValueFrom; {
		case f.FieldRef != nil:
			set(e.Name, a.fieldRefValue(w, pod, f.FieldRef.FieldPath))
		case f.ResourceFieldRef != nil:
			set(e.Name, resourceFieldValue(pod, c, f.ResourceFieldRef, a.allocatable()))
		case f.ConfigMapKeyRef != nil:
			ref := f.ConfigMapKeyRef
			cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ptr.Deref(ref.Optional, false) {
				continue
			}
			if err != nil {
				return nil, sourceError("configmap", ref.Name, err)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if ptr.Deref(ref.Optional, false) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			set(e.Name, v)
		case f.SecretKeyRef != nil:
			ref := f.SecretKeyRef
			sec, err := a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ptr.Deref(ref.Optional, false) {
				continue
			}
			if err != nil {
				return nil, sourceError("secret", ref.Name, err)
			}
			v, ok := sec.Data[ref.Key]
			if !ok {
				if ptr.Deref(ref.Optional, false) {
					continue
				}
				return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
			}
			set(e.Name, string(v))
		}
	}
	env := make([]string, 0, len(order)+len(serviceEnv))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	for _, k := range slices.Sorted(maps.Keys(serviceEnv)) {
		if _, ok := vals[k]; !ok {
			env = append(env, k+"="+serviceEnv[k])
		}
	}
	return env, nil
}

// sourceError words a failed ConfigMap or Secret read as kubelet does.
func sourceError(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found", kind, name)
	}
	return fmt.Errorf("failed to get %s %q: %w", kind, name, err)
}

// expandEnv replaces $(NAME) with the value of NAME in the first of
// sources that has it; $$ escapes.
func expandEnv(s string, sources ...map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			if v, ok := lookupEnv(s[i+2:i+end], sources); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func lookupEnv(name string, sources []map[string]string) (string, bool) {
	for _, vals := range sources {
		if v, ok := vals[name]; ok {
			return v, true
		}
	}
	return "", false
}

// resourceFieldValue resolves limits.* and requests.* of the container; a
// limit the container does not set is the node's allocatable, as the
// kubelet's downward API defaults it.
func resourceFieldValue(pod *corev1.Pod, c corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) string {
	if ref.ContainerName != "" {
		for _, cc := range pod.Spec.Containers {
			if cc.Name == ref.ContainerName {
				c = cc
			}
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok && kind == "limits" {
		q, ok = allocatable[corev1.ResourceName(name)]
	}
	if !ok {
		return "0"
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		if name == "cpu" {
			return strconv.FormatInt((q.MilliValue()+999)/1000, 10)
		}
		return strconv.FormatInt(q.Value(), 10)
	}
	if name == "cpu" {
		return strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10)
	}
	return strconv.FormatInt((q.Value()+divisor.Value()-1)/divisor.Value(), 10)
}

// volumeFile is one file of a configMap, secret, downwardAPI or projected volume.
type volumeFile struct {
	path string
	data []byte
	mode os.FileMode
}

// prepareVolumes materializes the pod's volumes under its directory on the
// node, once: emptyDir directories, files of configMap, secret,
// downwardAPI and projected volumes (with a service account token from
// the TokenRequest API), hostPath checks, image volumes (the image's files,
// read-only) and the directories of bound claims' volumes (claims.go). Volumes of a pod whose
// runtime keeps no files (simulated) are skipped.
func (a *Agent) prepareVolumes(ctx context.Context, w *podWorker, pod *corev1.Pod) error {
	dirs, ok := a.cfg.Runtime.(podDirRuntime)
	if !ok {
		return nil
	}
	if w.volumes != nil {
		a.refreshVolumes(ctx, w, pod, dirs)
		return nil
	}
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(dirs.PodDir(string(pod.UID)), "volumes", v.Name)
		switch {
		case v.HostPath != nil:
			p := v.HostPath.Path
			t := ptr.Deref(v.HostPath.Type, corev1.HostPathUnset)
			switch t {
			case corev1.HostPathDirectoryOrCreate:
				if err := os.MkdirAll(p, 0o755); err != nil {
					return volumeError(v.Name, err)
				}
			case corev1.HostPathFileOrCreate:
				f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o644)
				if err != nil {
					return volumeError(v.Name, err)
				}
				f.Close()
			case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket:
				if _, err := os.Stat(p); err != nil {
					return volumeError(v.Name, fmt.Errorf("hostPath type check failed: %s is not a %s", p, strings.ToLower(string(t))))
				}
			}
			paths[v.Name] = p
			continue
		case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
			p, err := a.claimPath(ctx, pod, v)
			if err != nil {
				return volumeError(v.Name, err)
			}
			paths[v.Name] = p
			continue
		case v.Image != nil:
			if err := a.mountImageVolume(ctx, pod, v, dir); err != nil {
				return volumeError(v.Name, err)
			}
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
			if err := runtime.MountTmpfs(dir, memoryVolumeSize(pod, v.EmptyDir)); err != nil {
				return volumeError(v.Name, err)
			}
			a.ownEmptyDir(pod, v.Name, dir)
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return volumeError(v.Name, err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				return volumeError(v.Name, err)
			}
			a.ownEmptyDir(pod, v.Name, dir)
		default:
			files, err := a.volumeFiles(ctx, w, pod, v, "")
			if err != nil {
				return volumeError(v.Name, err)
			}
			if files == nil {
				continue
			}
			if _, err := writeAtomic(dir, files, podFSGroup(pod)); err != nil {
				return volumeError(v.Name, err)
			}
		}
		paths[v.Name] = dir
	}
	w.volumes = paths
	return nil
}

// mountImageVolume mounts the image an image volume names at dir, pulled
// first as its pull policy says (as a container's image is: Always pulls
// unless the image is a local one, Never fails when it is missing).
func (a *Agent) mountImageVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume, dir string) error {
	m, ok := a.cfg.Runtime.(runtime.ImageMounter)
	if !ok {
		return fmt.Errorf("the node's runtime (%s) cannot mount images", a.cfg.Runtime.Name())
	}
	ref := v.Image.Reference
	if ref == "" {
		return errors.New("the image volume names no image reference")
	}
	_, present, err := a.cfg.Runtime.ImageStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("failed to inspect image %q: %w", ref, err)
	}
	if mustPull(ref, v.Image.PullPolicy, present) {
		if v.Image.PullPolicy == corev1.PullNever {
			return fmt.Errorf("image %q is not present with pull policy of Never", ref)
		}
		if _, err := a.cfg.Runtime.PullImage(ctx, ref); err != nil {
			return fmt.Errorf("failed to pull image %q: %w", ref, err)
		}
	}
	return m.MountImage(ctx, ref, string(pod.UID), v.Name, dir)
}

// memoryVolumeSize is the size of a memory-backed emptyDir, as kubelet
// sizes it: its sizeLimit, else the pod's memory limit (the sum of its
// containers' when each has one), else 0 for the kernel's default.
func memoryVolumeSize(pod *corev1.Pod, e *corev1.EmptyDirVolumeSource) int64 {
	if e.SizeLimit != nil && e.SizeLimit.Sign() > 0 {
		return e.SizeLimit.Value()
	}
	var sum int64
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return 0
		}
		sum += q.Value()
	}
	return sum
}

// ownEmptyDir gives an emptyDir the pod's fsGroup (setVolumeOwnership,
// read-write). As the kubelet, a failure only warns: the volume is still
// mounted.
func (a *Agent) ownEmptyDir(pod *corev1.Pod, volume, dir string) {
	fsGroup := podFSGroup(pod)
	if fsGroup == nil {
		return
	}
	if err := setVolumeOwnership(dir, *fsGroup, false); err != nil {
		a.log.Warn("failed to give a volume the pod's fsGroup", "pod", pod.Namespace+"/"+pod.Name, "volume", volume, "fsGroup", *fsGroup, "err", err)
	}
}

func volumeError(name string, err error) error {
	return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", name, err)
}

func writeVolumeFiles(dir string, files []volumeFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// refreshVolumes brings the pod's configMap, secret, downwardAPI and
// projected volumes up to date on each full sync, as the kubelet's volume
// manager remounts them: a changed ConfigMap, Secret, ClusterTrustBundle
// or pod label shows in the container's files, atomically (writeAtomic);
// an optional source that appears or goes adds or removes its files. A
// source that cannot be read keeps the volume as it is. Service account
// tokens are kept, not asked for again on every sync.
func (a *Agent) refreshVolumes(ctx context.Context, w *podWorker, pod *corev1.Pod, dirs podDirRuntime) {
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil && v.Secret == nil && v.DownwardAPI == nil && v.Projected == nil {
			continue
		}
		dir := filepath.Join(dirs.PodDir(string(pod.UID)), "volumes", v.Name)
		if w.volumes[v.Name] != dir {
			continue
		}
		files, err := a.volumeFiles(ctx, w, pod, v, dir)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Debug("volume not refreshed", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name, "err", err)
			}
			continue
		}
		if changed, err := writeAtomic(dir, files, podFSGroup(pod)); err != nil {
			a.log.Warn("failed to refresh a volume", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name, "err", err)
		} else if changed {
			a.log.Debug("volume refreshed", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name)
		}
	}
}

// volumeFiles lists the files of a configMap, secret, downwardAPI or
// projected volume (empty, not nil, when it has none); nil for volume
// types it does not know. dir, when set, is the volume's directory being
// refreshed: a service account token is read back from it, not asked for.
func (a *Agent) volumeFiles(ctx context.Context, w *podWorker, pod *corev1.Pod, v corev1.Volume, dir string) ([]volumeFile, error) {
	files, err := a.volumeFilesOf(ctx, w, pod, v, dir)
	if err == nil && files == nil && (v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil) {
		files = []volumeFile{}
	}
	return files, err
}

func (a *Agent) volumeFilesOf(ctx context.Context, w *podWorker, pod *corev1.Pod, v corev1.Volume, dir string) ([]volumeFile, error) {
	mode := func(def *int32, item *int32) os.FileMode {
		if item != nil {
			return os.FileMode(*item)
		}
		return os.FileMode(ptr.Deref(def, defaultVolumeFileMode))
	}
	switch {
	case v.ConfigMap != nil:
		return a.configMapFiles(ctx, pod, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode, nil))
	case v.Secret != nil:
		return a.secretFiles(ctx, pod, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode, nil))
	case v.DownwardAPI != nil:
		return a.downwardFiles(w, pod, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode, nil))
	case v.Projected != nil:
		def := mode(v.Projected.DefaultMode, nil)
		// Credentials are the pod's own: with an fsGroup the kubelet
		// writes them 0600 whatever the defaultMode, and the group's
		// read bit then makes them 0640.
		cred := def
		if podFSGroup(pod) != nil {
			cred = 0o600
		}
		files := []volumeFile{}
		for i, src := range v.Projected.Sources {
			var more []volumeFile
			var err error
			switch {
			case src.PodCertificate != nil:
				more, err = a.podCertificateFiles(ctx, w, pod, v.Name, i, src.PodCertificate, cred)
			case src.ConfigMap != nil:
				more, err = a.configMapFiles(ctx, pod, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
			case src.Secret != nil:
				more, err = a.secretFiles(ctx, pod, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
			case src.DownwardAPI != nil:
				more, err = a.downwardFiles(w, pod, src.DownwardAPI.Items, def)
			case src.ServiceAccountToken != nil:
				if dir != "" {
					if b, rerr := os.ReadFile(filepath.Join(dir, filepath.Clean("/"+src.ServiceAccountToken.Path))); rerr == nil {
						more = []volumeFile{{path: src.ServiceAccountToken.Path, data: b, mode: cred}}
						break
					}
				}
				more, err = a.tokenFile(ctx, pod, src.ServiceAccountToken, cred)
			case src.ClusterTrustBundle != nil:
				more, err = a.trustBundleFile(ctx, src.ClusterTrustBundle, cred)
			}
			if err != nil {
				return nil, err
			}
			files = append(files, more...)
		}
		return files, nil
	}
	return nil, nil
}

func keyFiles(data map[string][]byte, items []corev1.KeyToPath, def os.FileMode, missing func(key string) error) ([]volumeFile, error) {
	var files []volumeFile
	if len(items) == 0 {
		for k, v := range data {
			files = append(files, volumeFile{path: k, data: v, mode: def})
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if err := missing(it.Key); err != nil {
				return nil, err
			}
			continue
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		files = append(files, volumeFile{path: it.Path, data: v, mode: m})
	}
	return files, nil
}

func (a *Agent) configMapFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]volumeFile, error) {
	cm, err := a.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return nil, nil
	}
	if err != nil {
		return nil, sourceError("configmap", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, def, func(key string) error {
		if ptr.Deref(optional, false) {
			return nil
		}
		return fmt.Errorf("configmap references non-existent config key: %s", key)
	})
}

func (a *Agent) secretFiles(ctx context.Context, pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) ([]volumeFile, error) {
	sec, err := a.client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return nil, nil
	}
	if err != nil {
		return nil, sourceError("secret", name, err)
	}
	return keyFiles(sec.Data, items, def, func(key string) error {
		if ptr.Deref(optional, false) {
			return nil
		}
		return fmt.Errorf("references non-existent secret key: %s", key)
	})
}

func (a *Agent) downwardFiles(w *podWorker, pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def os.FileMode) ([]volumeFile, error) {
	files := make([]volumeFile, 0, len(items))
	for _, it := range items {
		var val string
		switch {
		case it.FieldRef != nil:
			switch it.FieldRef.FieldPath {
			case "metadata.labels":
				val = formatMap(pod.Labels)
			case "metadata.annotations":
				val = formatMap(pod.Annotations)
			default:
				val = a.fieldRefValue(w, pod, it.FieldRef.FieldPath)
			}
		case it.ResourceFieldRef != nil:
			c := corev1.Container{}
			if len(pod.Spec.Containers) > 0 {
				c = pod.Spec.Containers[0]
			}
			val = resourceFieldValue(pod, c, it.ResourceFieldRef, a.allocatable())
		default:
			return nil, errors.New("downwardAPI item without fieldRef or resourceFieldRef")
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		files = append(files, volumeFile{path: it.Path, data: []byte(val), mode: m})
	}
	return files, nil
}

// formatMap writes labels or annotations as kubelet does: key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// tokenFile asks the TokenRequest API for the pod's service account token,
// bound to the pod.
func (a *Agent) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, def os.FileMode) ([]volumeFile, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(ptr.Deref(src.ExpirationSeconds, defaultTokenExpiry)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		tr.Spec.Audiences = []string{src.Audience}
	}
	out, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	return []volumeFile{{path: src.Path, data: []byte(out.Status.Token), mode: def}}, nil
}

// mountsFor resolves a container's volumeMounts to host paths (with
// subPath, or subPathExpr expanded from env, the container's resolved
// environment as NAME=value). configMap, secret, downwardAPI and projected
// volumes are always read-only, as kubelet mounts them, and so are image
// volumes.
func mountsFor(w *podWorker, pod *corev1.Pod, c corev1.Container, env []string) ([]runtime.Mount, error) {
	if w.volumes == nil {
		return nil, nil
	}
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	var mounts []runtime.Mount
	for _, m := range c.VolumeMounts {
		host, ok := w.volumes[m.Name]
		if !ok {
			if _, declared := byName[m.Name]; declared {
				continue
			}
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		v := byName[m.Name]
		ro := m.ReadOnly || v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || v.Image != nil ||
			(v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly)
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			expanded, err := expandSubPathExpr(m.SubPathExpr, env)
			if err != nil {
				return nil, err
			}
			subPath = expanded
		}
		if subPath != "" {
			sub := filepath.Join(host, filepath.Clean("/"+subPath))
			if _, err := os.Stat(sub); errors.Is(err, os.ErrNotExist) && (v.EmptyDir != nil || v.HostPath != nil || v.PersistentVolumeClaim != nil) {
				if err := os.MkdirAll(sub, 0o777); err != nil {
					return nil, fmt.Errorf("failed to create subPath %q of volume %q: %w", subPath, m.Name, err)
				}
			}
			host = sub
		}
		mounts = append(mounts, runtime.Mount{HostPath: host, ContainerPath: m.MountPath, ReadOnly: ro, NoExec: v.Image != nil})
	}
	return mounts, nil
}

// expandSubPathExpr expands $(VAR) in a subPathExpr from env, as the
// kubelet does: a variable without a value is an error, and so is a result
// that is absolute or steps out with "..".
func expandSubPathExpr(expr string, env []string) (string, error) {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	var missing []string
	for rest := expr; ; {
		i := strings.Index(rest, "$(")
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], ')')
		if j < 0 {
			break
		}
		if name := rest[i+2 : i+j]; vals[name] == "" && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
		rest = rest[i+j+1:]
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	sub := expandEnv(expr, vals)
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", sub)
	}
	for _, part := range strings.Split(filepath.ToSlash(sub), "/") {
		if part == ".." {
			return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", sub)
		}
	}
	return sub, nil
}
