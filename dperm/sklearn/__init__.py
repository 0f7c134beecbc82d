"""scikit-learn estimators: PrivateLinearClassifier (`classifier`),
PrivateLinearRegression (`regressor`) and RandomFourierFeatures (`features`); what the
two linear models share is in `_base`."""
from dperm.sklearn.classifier import PrivateLinearClassifier
from dperm.sklearn.features import RandomFourierFeatures
from dperm.sklearn.regressor import PrivateLinearRegression

__all__ = ["PrivateLinearClassifier", "PrivateLinearRegression", "RandomFourierFeatures"]
