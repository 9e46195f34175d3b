"""Push notifications: the providers' wire protocols against local providers, devices, delivery."""
