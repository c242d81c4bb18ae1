"""The search: one cost interface (`scoring`: static model or the GPU) and the Optuna study
over a kernel's move space (`study`)."""
