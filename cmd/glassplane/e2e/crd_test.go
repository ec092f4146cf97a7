package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// crontabCRD is the CronTab CRD of Kubernetes' documentation, with a
// minimum, a CEL rule, status and scale subresources, printer columns, a
// short name and a category.
const crontabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: "replicas must be at most 10"
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                default: 1
          status:
            type: object
            properties:
              replicas:
                type: integer
`

// TestCustomResourceDefinitionWithKubectl drives a CRD's whole life with
// real kubectl: create, discovery, get by plural and short name with the
// printer columns, explain, schema and CEL refusals with field paths,
// pruning, the status and scale subresources, and deleting the CRD
// deleting its objects.
func TestCustomResourceDefinitionWithKubectl(t *testing.T) {
	c := SharedCluster(t)
	c.MustKubectl(t, crontabCRD, "apply", "-f", "-")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "crd", "crontabs.stable.example.com", "--ignore-not-found", "--wait=false")
	})
	c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")

	Eventually(t, 10*time.Second, "api-resources lists crontabs", func() error {
		out, _ := c.Kubectl(t, "", "api-resources", "--api-group=stable.example.com")
		if !strings.Contains(out, "crontabs") || !strings.Contains(out, "ct") || !strings.Contains(out, "CronTab") {
			return fmt.Errorf("api-resources: %s", out)
		}
		return nil
	})

	c.MustKubectl(t, `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-crontab
  namespace: default
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
`, "create", "-f", "-")

	out := c.MustKubectl(t, "", "get", "crontabs")
	if !strings.Contains(out, "SPEC") || !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "my-crontab") || !strings.Contains(out, "* * * * */5") {
		t.Errorf("kubectl get crontabs:\n%s", out)
	}
	out = c.MustKubectl(t, "", "get", "ct", "my-crontab", "-o", "jsonpath={.spec.replicas}")
	if out != "1" {
		t.Errorf("spec.replicas = %q, want the default 1", out)
	}

	t.Run("explain", func(t *testing.T) {
		Eventually(t, 10*time.Second, "kubectl explain crontab.spec", func() error {
			out, err := c.Kubectl(t, "", "explain", "crontab.spec")
			if err != nil || !strings.Contains(out, "cronSpec") || !strings.Contains(out, "replicas") {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	})

	t.Run("schema refusals", func(t *testing.T) {
		bad := func(spec string) string {
			return "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: bad\n  namespace: default\nspec:\n" + spec
		}
		out, err := c.Kubectl(t, bad("  cronSpec: \"not a cron\"\n"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, `spec.cronSpec: Invalid value: "not a cron": spec.cronSpec in body should match`) {
			t.Errorf("a bad cronSpec: %v\n%s", err, out)
		}
		out, err = c.Kubectl(t, bad("  replicas: 11\n"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, "replicas must be at most 10") || !strings.Contains(out, "spec: Invalid value") {
			t.Errorf("the CEL rule: %v\n%s", err, out)
		}
		out, err = c.Kubectl(t, bad("  replicas: 0\n"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1") {
			t.Errorf("replicas 0: %v\n%s", err, out)
		}
		if out, err := c.Kubectl(t, "", "get", "crontab", "bad"); err == nil {
			t.Errorf("the refused object was stored:\n%s", out)
		}
	})

	t.Run("pruning", func(t *testing.T) {
		c.MustKubectl(t, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: pruned\n  namespace: default\nspec:\n  image: x\n  colour: red\n", "create", "--validate=false", "-f", "-")
		out := c.MustKubectl(t, "", "get", "crontab", "pruned", "-o", "json")
		if strings.Contains(out, "colour") {
			t.Errorf("unknown field kept:\n%s", out)
		}
	})

	t.Run("status and scale", func(t *testing.T) {
		c.MustKubectl(t, "", "patch", "crontab", "my-crontab", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":2}}`)
		c.MustKubectl(t, "", "scale", "crontab", "my-crontab", "--replicas=3")
		out := c.MustKubectl(t, "", "get", "crontab", "my-crontab", "-o", "jsonpath={.spec.replicas}/{.status.replicas}")
		if out != "3/2" {
			t.Errorf("spec/status replicas = %q, want 3/2", out)
		}
	})

	t.Run("delete the CRD", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "crd", "crontabs.stable.example.com", "--timeout=30s")
		Eventually(t, 10*time.Second, "crontabs no longer served", func() error {
			out, err := c.Kubectl(t, "", "get", "crontabs")
			if err == nil {
				return fmt.Errorf("still served: %s", out)
			}
			return nil
		})
		c.MustKubectl(t, crontabCRD, "create", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
		Eventually(t, 10*time.Second, "an empty list after re-creating the CRD", func() error {
			out, err := c.Kubectl(t, "", "get", "crontabs", "-A", "-o", "name")
			if err != nil || strings.TrimSpace(out) != "" {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
	})
}
