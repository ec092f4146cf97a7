package apiserver_test

import (
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassAdmission: a pod naming a RuntimeClass that does not
// exist is refused as kube-apiserver refuses it; one naming a class gets
// its overhead and scheduling.
func TestRuntimeClassAdmission(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	rcs := env.client.NodeV1().RuntimeClasses()
	rc, err := rcs.Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-rc"},
		Handler:    "runc",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"sandbox": "yes"},
			Tolerations:  []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcs.Delete(ctxT(t), rc.Name, metav1.DeleteOptions{}) })

	pods := env.client.CoreV1().Pods(ns)
	pod := testPod("missing")
	pod.Spec.RuntimeClassName = ptr.To(ns + "-nonexistent")
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "missing" is forbidden: pod rejected: RuntimeClass "`+ns+`-nonexistent" not found`) {
		t.Errorf("a pod naming a missing class: %v", err)
	}

	pod = testPod("classy")
	pod.Spec.RuntimeClassName = ptr.To(rc.Name)
	got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Overhead[corev1.ResourceCPU]; q.Cmp(resource.MustParse("10m")) != 0 {
		t.Errorf("overhead = %v", got.Spec.Overhead)
	}
	if got.Spec.NodeSelector["sandbox"] != "yes" || len(got.Spec.Tolerations) == 0 {
		t.Errorf("scheduling not merged: nodeSelector %v, tolerations %v", got.Spec.NodeSelector, got.Spec.Tolerations)
	}

	pod = testPod("conflict")
	pod.Spec.RuntimeClassName = ptr.To(rc.Name)
	pod.Spec.NodeSelector = map[string]string{"sandbox": "no"}
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = no") {
		t.Errorf("a conflicting nodeSelector: %v", err)
	}
}

// TestCertificateSigningRequestStrategy: the requester is recorded
// whatever the body says, and approval changes only the conditions and
// the metadata, as upstream's approval strategy.
func TestCertificateSigningRequestStrategy(t *testing.T) {
	env := shared
	ctx := ctxT(t)
	csrs := env.client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: []byte("-----BEGIN CERTIFICATE REQUEST-----\nMA==\n-----END CERTIFICATE REQUEST-----\n"), SignerName: "example.com/signer",
			Username: "someone-else", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { csrs.Delete(ctxT(t), csr.Name, metav1.DeleteOptions{}) })
	if csr.Spec.Username == "someone-else" || csr.Spec.Username == "" {
		t.Errorf("spec.username = %q, want the requester's", csr.Spec.Username)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
	csr.Spec.SignerName = "example.com/other"
	csr.Annotations = map[string]string{"approved-by": "test"}
	csr.Status.Certificate = []byte("not through approval")
	approved, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(approved.Status.Conditions) != 1 || approved.Status.Conditions[0].Type != certificatesv1.CertificateApproved || approved.Spec.SignerName != "example.com/signer" ||
		approved.Annotations["approved-by"] != "test" || len(approved.Status.Certificate) != 0 {
		t.Errorf("after approval: conditions %v, signer %q, annotations %v, certificate %q", approved.Status.Conditions, approved.Spec.SignerName, approved.Annotations, approved.Status.Certificate)
	}
	for selector, want := range map[string]int{"spec.signerName=example.com/signer": 1, "spec.signerName=example.com/other": 0} {
		list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Fatalf("%s: %v", selector, err)
		}
		n := 0
		for _, c := range list.Items {
			if c.Name == csr.Name {
				n++
			}
		}
		if n != want {
			t.Errorf("%s lists the CSR %d times, want %d", selector, n, want)
		}
	}
}
