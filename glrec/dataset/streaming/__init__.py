"""Samples straight to training: batches of arrays or CUDA tensors (:mod:`.tensors`) and the PyTorch
``IterableDataset`` over them (:mod:`.torch_data`).

The top of the dataset room below the front door (:mod:`glrec.dataset.api`).
"""
