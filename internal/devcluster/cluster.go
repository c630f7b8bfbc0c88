package devcluster

// clusterComponents are the Kubernetes parts of the stack, in start order.
func clusterComponents() []component {
	return []component{
		binariesComponent(),
		pkiComponent(),
		etcdComponent(),
		apiServerComponent(),
		controllerManagerComponent(),
		schedulerComponent(),
		kueueComponent(),
		podNetworkComponent(),
		kwokComponent(),
		bootstrapComponent(),
		prometheusComponent(),
	}
}
