package gpu

import (
	"regexp"
	"strings"
)

// Job is a workload whose GPUs are asked about: DCGM series name the pod
// that held a GPU, not its workload, so a job's series are those of the
// pods its controller names after it, in the way that controller names
// them (podNames).
type Job struct {
	Namespace, Name string
	// Kind is the workload's kind as Gantry records it, in any case: a
	// template's kind (training, notebook, inference) or its Kueue
	// Workload's owner's kind (Job, StatefulSet, Deployment, Pod, ...).
	Kind string
}

// String is the job as logs name it.
func (j Job) String() string { return j.Namespace + "/" + j.Name }

// podNames is how a kind's controller names its pods after the workload.
type podNames int

const (
	// anyPods is <name>-<anything>: a kind whose pod names Gantry does not
	// know (a JobSet, a RayJob), or a name so long that the controller's
	// suffix may have been cut.
	anyPods podNames = iota
	// jobPods is a Job's: <name>-<5 random>, or <name>-<index>-<5 random>
	// for an Indexed Job.
	jobPods
	// statefulSetPods is <name>-<ordinal>.
	statefulSetPods
	// replicaSetPods is a Deployment's: <name>-<pod template hash>-<5 random>.
	replicaSetPods
	// barePod is a Pod's own name: Kueue's Workload of a plain Pod is
	// owned by the Pod.
	barePod
	// cutPods is <the name's first 58 characters><anything>: a generated
	// name is cut to 58 characters before its random suffix.
	cutPods
)

// Kubernetes' generated names (rand.String, rand.SafeEncodeString) use
// these characters: no vowels, no 0, 1 or 3.
const generatedChar = `[bcdfghjklmnpqrstvwxz2456789]`

// suffixes are the patterns of what follows a job's name (or, for cutPods,
// its cut name) in its pods' names; PromQL anchors them as Go's
// suffixMatch does.
var suffixes = [...]string{
	anyPods:         `-.+`,
	jobPods:         `-([0-9]+-)?` + generatedChar + `{5}`,
	statefulSetPods: `-[0-9]+`,
	replicaSetPods:  `-` + generatedChar + `{1,10}-` + generatedChar + `{5}`,
	barePod:         ``,
	cutPods:         `.+`,
}

// afterTheName are the namings whose suffix follows the job's whole name
// with a dash (barePod has none; cutPods follows a cut name).
var afterTheName = [...]podNames{anyPods, jobPods, statefulSetPods, replicaSetPods}

var suffixMatch = func() (out [len(suffixes)]*regexp.Regexp) {
	for i, s := range suffixes {
		out[i] = regexp.MustCompile(`^(?:` + s + `)$`)
	}
	return out
}()

// generatedBase is how long the base of a generated name may be (63
// characters less the 5 random ones): the API server cuts a longer one.
const generatedBase = 58

// longestMiddle is the longest part a Job or a Deployment puts between its
// name and the random suffix: "-", up to 10 characters (an index, a pod
// template hash), "-".
const longestMiddle = 12

// pods is how the job's pods are named: the part of its name they begin
// with, and what follows it.
func (j Job) pods() (prefix string, names podNames) {
	names = anyPods
	switch strings.ToLower(j.Kind) {
	case "training", "job":
		names = jobPods
	case "notebook", "statefulset":
		return j.Name, statefulSetPods
	case "inference", "deployment":
		names = replicaSetPods
	case "pod":
		return j.Name, barePod
	}
	switch {
	case len(j.Name) >= generatedBase:
		return j.Name[:generatedBase], cutPods
	case len(j.Name)+longestMiddle > generatedBase:
		// A long index or hash may have cut the suffix.
		return j.Name, anyPods
	}
	return j.Name, names
}

// podPattern is the PromQL regular expression of the job's pods' names.
func (j Job) podPattern() string {
	prefix, names := j.pods()
	return regexp.QuoteMeta(prefix) + suffixes[names]
}
