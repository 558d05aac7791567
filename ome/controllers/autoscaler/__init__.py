"""The autoscaler controller: HPA/KEDA/External/None per component, PodDisruptionBudgets, AutoscalerPolicy."""
