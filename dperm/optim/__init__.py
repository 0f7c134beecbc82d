"""The solvers: the batched L-BFGS front end (`erm`), trust-region Newton-CG (`newton`)
and the softmax (multinomial) objective (`softmax`).  No privacy here."""
