package naming

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The admission policies and the local stack's kwok stages repeat Gantry's
// keys as data; every key they name must be one this package defines, and
// the policy that requires the shared labels must list exactly SharedLabels.
func TestDeployUsesTheSameKeys(t *testing.T) {
	known := []string{
		LabelTeam, LabelOwner, LabelTemplate, LabelTemplateVersion, LabelKind, LabelPool, LabelCostCenter, LabelLaunchID,
		LabelQueueName, LabelPriorityClass, LabelManagedBy, LabelAppName, LabelInstance, LabelComponent, LabelPartOf, LabelVersion,
		AnnotationDisplayName, AnnotationCostCenter, AnnotationParameters,
		AnnotationSimulateDuration, AnnotationSimulateExitCode, AnnotationSimulateReason, AnnotationSimulateImagePullError, AnnotationSimulateNodeNotReady,
		AnnotationSimGPUUtil, AnnotationSimulateUtilization,
	}
	key := regexp.MustCompile(`(?:sim\.)?gantry\.dev/[a-z0-9-]+|app\.kubernetes\.io/[a-z-]+|kueue\.x-k8s\.io/(?:queue-name|priority-class)`)
	files, err := filepath.Glob("../../deploy/policies/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files, "the admission policies are found")
	files = append(files, "../../deploy/local/kwok/stages.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, k := range key.FindAllString(string(b), -1) {
			assert.Contains(t, known, k, "%s names a key Gantry does not define", f)
		}
	}

	b, err := os.ReadFile("../../deploy/policies/workload-labels.yaml")
	require.NoError(t, err)
	list := regexp.MustCompile(`(?s)\[('[^\]]*')\]`).FindStringSubmatch(string(b))
	require.NotNil(t, list, "workload-labels.yaml lists the required labels")
	var required []string
	for _, m := range regexp.MustCompile(`'([^']+)'`).FindAllStringSubmatch(list[1], -1) {
		required = append(required, m[1])
	}
	want := SharedLabels()
	slices.Sort(required)
	slices.Sort(want)
	assert.Equal(t, want, required, "the policy requires the labels policy.Check requires")
}
