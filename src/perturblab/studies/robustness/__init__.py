"""*On the robustness of fine-tuned transformers* (the robustness paper): relative robustness of
classifiers and regressors to perturbations, Tables 1 and 3 (:mod:`.study`; its summary, tables
and heatmaps in :mod:`.summary`), of generated summaries, Table 4 (:mod:`.generation`), how
fine-tuning changed each layer, Fig. 1 (:mod:`.finetuning`), and which layers each perturbation
affects, Sec. 4.4 (:mod:`.layer_probes`)."""
