"""scikit-learn estimators: PrivateLinearClassifier (`classifier`),
PrivateLinearRegression (`regressor`) and RandomFourierFeatures (`features`); what the
two linear models share is in `_base`."""
