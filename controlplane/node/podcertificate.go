package node

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podCertificate is what the worker holds for one podCertificate source
// of a projected volume: the key and chain issued last (and when to ask
// again), and the key and request of a request in flight.
type podCertificate struct {
	keyPEM, chainPEM []byte
	refreshAt        time.Time
	pendingKey       []byte
	pendingRequest   string
}

// podCertificateFiles are the files of a podCertificate projection, as the
// kubelet's pod certificate manager provides them: the node generates a
// key of the source's type, asks for a certificate with a
// PodCertificateRequest (a stub PKCS#10 request signed with the key, for
// the pod, its service account and the node), and once a signer issued it
// writes the key and chain (credentialBundlePath: key then chain; keyPath;
// certificateChainPath). Until then the volume cannot be set up and the
// pod waits, as on a kubelet; after the certificate's beginRefreshAt a new
// key and request replace it once issued, the old ones serving meanwhile.
func (a *Agent) podCertificateFiles(ctx context.Context, w *podWorker, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection, mode os.FileMode) ([]volumeFile, error) {
	id := fmt.Sprintf("%s/%d", volume, index)
	if w.podCerts == nil {
		w.podCerts = map[string]*podCertificate{}
	}
	pc := w.podCerts[id]
	if pc == nil {
		pc = &podCertificate{}
		w.podCerts[id] = pc
	}
	if pc.pendingRequest == "" && (pc.chainPEM == nil || time.Now().After(pc.refreshAt)) {
		key, name, err := a.requestPodCertificate(ctx, pod, src)
		if err != nil {
			if pc.chainPEM != nil {
				a.log.Warn("failed to request a new pod certificate; the issued one serves", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			} else {
				return nil, fmt.Errorf("while requesting a pod certificate from signer %q: %w", src.SignerName, err)
			}
		}
		pc.pendingKey, pc.pendingRequest = key, name
	}
	if pc.pendingRequest != "" {
		if err := a.collectPodCertificate(ctx, pod, pc); err != nil && pc.chainPEM == nil {
			return nil, err
		}
	}
	if pc.chainPEM == nil {
		return nil, fmt.Errorf("no pod certificate from signer %q yet", src.SignerName)
	}
	var files []volumeFile
	if p := src.CredentialBundlePath; p != "" {
		files = append(files, volumeFile{path: p, data: append(append([]byte{}, pc.keyPEM...), pc.chainPEM...), mode: mode})
	}
	if p := src.KeyPath; p != "" {
		files = append(files, volumeFile{path: p, data: pc.keyPEM, mode: mode})
	}
	if p := src.CertificateChainPath; p != "" {
		files = append(files, volumeFile{path: p, data: pc.chainPEM, mode: mode})
	}
	return files, nil
}

// requestPodCertificate generates a key of src's type and creates the
// PodCertificateRequest for it, as the kubelet's does (generateName req-,
// owned by the pod).
func (a *Agent) requestPodCertificate(ctx context.Context, pod *corev1.Pod, src *corev1.PodCertificateProjection) (keyPEM []byte, request string, err error) {
	key, err := generatePodCertificateKey(src.KeyType)
	if err != nil {
		return nil, "", err
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, "", fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, "", fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, saName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("while getting the pod's service account: %w", err)
	}
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("while getting the node: %w", err)
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, GenerateName: "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: src.SignerName, PodName: pod.Name, PodUID: pod.UID,
			ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID,
			NodeName: types.NodeName(a.cfg.NodeName), NodeUID: node.UID,
			MaxExpirationSeconds: src.MaxExpirationSeconds, StubPKCS10Request: stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	created, err := a.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("while creating on API: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), created.Name, nil
}

// collectPodCertificate reads pc's request in flight: an issued chain
// replaces the key and chain held; a denied or failed request is
// forgotten (the next sync asks again) and said.
func (a *Agent) collectPodCertificate(ctx context.Context, pod *corev1.Pod, pc *podCertificate) error {
	name := pc.pendingRequest
	req, err := a.client.CertificatesV1().PodCertificateRequests(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("while getting PodCertificateRequest %s/%s: %w", pod.Namespace, name, err)
	}
	for _, c := range req.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			pc.pendingKey, pc.pendingRequest = nil, ""
			return fmt.Errorf("PodCertificateRequest %s/%s was %s: %s: %s", pod.Namespace, name, c.Type, c.Reason, c.Message)
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			pc.keyPEM, pc.chainPEM = pc.pendingKey, cleanCertificateChain([]byte(req.Status.CertificateChain))
			pc.refreshAt = time.Now().Add(time.Hour)
			if req.Status.BeginRefreshAt != nil {
				pc.refreshAt = req.Status.BeginRefreshAt.Time
			}
			pc.pendingKey, pc.pendingRequest = nil, ""
			return nil
		}
	}
	return fmt.Errorf("PodCertificateRequest %s/%s is not issued yet", pod.Namespace, name)
}

// generatePodCertificateKey generates a private key of one of the types a
// podCertificate projection may ask for.
func generatePodCertificateKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err := ed25519.GenerateKey(rand.Reader)
		return key, err
	}
	return nil, fmt.Errorf("unknown key type %q", keyType)
}

// cleanCertificateChain keeps only the CERTIFICATE blocks of a chain,
// without headers or text between them, as the kubelet writes it.
func cleanCertificateChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out.Bytes()
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
}
