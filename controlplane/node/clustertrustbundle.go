package node

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// trustBundleFile is a projected clusterTrustBundle source, as the kubelet
// writes it: the certificates of the ClusterTrustBundle named, or of every
// bundle of the signer the label selector matches (a nil selector matches
// none, an empty one all), deduplicated, as one PEM file at its path. A
// source that finds nothing is an empty file when optional, else an error
// that keeps the pod from starting.
func (a *Agent) trustBundleFile(ctx context.Context, src *corev1.ClusterTrustBundleProjection, mode os.FileMode) ([]volumeFile, error) {
	optional := ptr.Deref(src.Optional, false)
	var bundles []certificatesv1.ClusterTrustBundle
	switch {
	case src.Name != nil:
		ctb, err := a.client.CertificatesV1().ClusterTrustBundles().Get(ctx, *src.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional {
			return []volumeFile{{path: src.Path, data: []byte{}, mode: mode}}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
		}
		bundles = append(bundles, *ctb)
	case src.SignerName != nil:
		selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("while parsing label selector: %w", err)
		}
		list, err := a.client.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, fmt.Errorf("while listing ClusterTrustBundles matching label selector %v: %w", src.LabelSelector, err)
		}
		if src.LabelSelector != nil {
			for _, ctb := range list.Items {
				if ctb.Spec.SignerName == *src.SignerName {
					bundles = append(bundles, ctb)
				}
			}
		}
		if len(bundles) == 0 {
			if optional {
				return []volumeFile{{path: src.Path, data: []byte{}, mode: mode}}, nil
			}
			return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
		}
	default:
		return nil, errors.New("a clusterTrustBundle source names neither a bundle nor a signer")
	}
	return []volumeFile{{path: src.Path, data: trustAnchors(bundles), mode: mode}}, nil
}

// trustAnchors is the bundles' certificates, each once, as PEM.
func trustAnchors(bundles []certificatesv1.ClusterTrustBundle) []byte {
	var ders []string
	for _, ctb := range bundles {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			ders = append(ders, string(b.Bytes))
		}
	}
	slices.Sort(ders)
	ders = slices.Compact(ders)
	out := []byte{}
	for _, d := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(d)})...)
	}
	return out
}
