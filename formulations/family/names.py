"""The SVM family's member and formulation names, as tables, the command line and the tests spell them.

Kept apart from the member modules (which import Pyomo and cvxpy), like formulations.names, so that reading a
name costs no solver-stack import.
"""

# members (LIBSVM's svm_type, scikit-learn's class)
NU_SVC = "nu_svc"  # NuSVC
ONE_CLASS = "one_class"  # OneClassSVM
EPS_SVR = "eps_svr"  # SVR
NU_SVR = "nu_svr"  # NuSVR
# members (LIBLINEAR's solver_type, scikit-learn's LinearSVC)
SQUARED_HINGE = "squared_hinge"  # LinearSVC(loss="squared_hinge"): L2-loss SVM
CRAMMER_SINGER = "crammer_singer"  # LinearSVC(multi_class="crammer_singer")

# the kinds of formulation a member has
PRIMAL = "primal"  # the linear primal (w in the data's space)
LINEAR_DUAL = "linear_dual"  # the dual with w = sum_i c_i x_i lifted (no n x n matrix)
KERNEL_DUAL = "kernel_dual"  # the dual with a Gram matrix K

# formulations: "<member>_<kind>"
NU_SVC_PRIMAL = "nu_svc_primal"
NU_SVC_LINEAR_DUAL = "nu_svc_linear_dual"
NU_SVC_KERNEL_DUAL = "nu_svc_kernel_dual"
ONE_CLASS_PRIMAL = "one_class_primal"
ONE_CLASS_KERNEL_DUAL = "one_class_kernel_dual"
EPS_SVR_PRIMAL = "eps_svr_primal"
EPS_SVR_KERNEL_DUAL = "eps_svr_kernel_dual"
NU_SVR_PRIMAL = "nu_svr_primal"
NU_SVR_KERNEL_DUAL = "nu_svr_kernel_dual"

SQUARED_HINGE_PRIMAL = "squared_hinge_primal"
SQUARED_HINGE_LINEAR_DUAL = "squared_hinge_linear_dual"
CRAMMER_SINGER_PRIMAL = "crammer_singer_primal"
CRAMMER_SINGER_LINEAR_DUAL = "crammer_singer_linear_dual"

LIBSVM_MEMBERS = (NU_SVC, ONE_CLASS, EPS_SVR, NU_SVR)
LIBLINEAR_MEMBERS = (SQUARED_HINGE, CRAMMER_SINGER)
LIBLINEAR_FORMULATIONS = (SQUARED_HINGE_PRIMAL, SQUARED_HINGE_LINEAR_DUAL, CRAMMER_SINGER_PRIMAL,
                          CRAMMER_SINGER_LINEAR_DUAL)
LIBSVM_FORMULATIONS = (NU_SVC_PRIMAL, NU_SVC_LINEAR_DUAL, NU_SVC_KERNEL_DUAL, ONE_CLASS_PRIMAL,
                       ONE_CLASS_KERNEL_DUAL, EPS_SVR_PRIMAL, EPS_SVR_KERNEL_DUAL, NU_SVR_PRIMAL, NU_SVR_KERNEL_DUAL)

# the tasks, which decide how y is checked
CLASSIFICATION = "classification"  # two labels, mapped to -1/+1
NOVELTY = "novelty"  # no y: one class
REGRESSION = "regression"  # real targets
MULTICLASS = "multiclass"  # two or more labels, mapped to 0..k-1 in sorted order
