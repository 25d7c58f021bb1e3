# Kenward-Roger oracle for rankci.mixed (pbkrtest), on unbalanced subsets of the oracle datasets.
# Run from the repository root:  Rscript validation/kenward_roger_oracle.R
# Writes tests/fixtures/kenward_roger/<name>_{fit,means,pairs,ftest}.csv and sessionInfo.txt.
# Datasets: tests/fixtures/oracles/{small,unbalanced}.csv.gz (see tests/fixtures/oracles/README.md).
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(pbkrtest); library(emmeans)})
emm_options(lmerTest.limit = Inf, pbkrtest.limit = Inf)
out <- "tests/fixtures/kenward_roger"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
w <- function(x, name) write.csv(x, file.path(out, name), row.names = FALSE)
run <- function(name, d) {
  d$model <- factor(d$model); d$cluster <- factor(d$cluster); d$item <- factor(d$item)
  fit <- lmer(score ~ model + (1 | cluster) + (1 | cluster:item), data = d, REML = TRUE)
  vc <- as.data.frame(VarCorr(fit))
  w(data.frame(term = vc$grp, variance = vc$vcov, theta = c(getME(fit, "theta"), NA),
               n_rows = nrow(d), n_clusters = nlevels(d$cluster)), paste0(name, "_fit.csv"))
  emm <- emmeans(fit, ~ model, lmer.df = "kenward-roger")
  s <- summary(emm)
  sat_means <- summary(emmeans(fit, ~ model, lmer.df = "satterthwaite"))
  w(data.frame(model = s$model, emmean = s$emmean, SE = s$SE, df = s$df,
               df_satterthwaite = sat_means$df), paste0(name, "_means.csv"))
  pr <- summary(pairs(emm, reverse = FALSE, adjust = "none"))
  w(data.frame(contrast = pr$contrast, estimate = pr$estimate, SE = pr$SE, df = pr$df,
               t = pr$t.ratio, p = pr$p.value), paste0(name, "_pairs.csv"))
  fit0 <- update(fit, . ~ . - model)
  kr <- KRmodcomp(fit, fit0)
  st <- kr$stats
  sat <- anova(fit, type = "III", ddf = "Satterthwaite")
  w(data.frame(F = st$Fstat, F_unscaled = st$FstatU, scale = st$F.scaling, df_num = st$ndf,
               df_den = st$ddf, p = st$p.value, F_satterthwaite = sat$`F value`,
               df_den_satterthwaite = sat$DenDF, p_satterthwaite = sat$`Pr(>F)`),
    paste0(name, "_ftest.csv"))
}
small <- read.csv(gzfile("tests/fixtures/oracles/small.csv.gz"), colClasses = c(model = "character",
  item = "character", cluster = "character"))
# unbalanced small: drop every row of m05 in clusters c001-c004 and every 3rd row of m02
keep <- !(small$model == "m05" & small$cluster %in% sprintf("c%03d", 1:4))
keep <- keep & !(small$model == "m02" & seq_len(nrow(small)) %% 3 == 0)
run("small_unbalanced", small[keep, ])
ub <- read.csv(gzfile("tests/fixtures/oracles/unbalanced.csv.gz"), colClasses = c(model = "character",
  item = "character", cluster = "character"))
# the unbalanced design's first 8 clusters (m08 has no rows in c001-c003; MCAR gaps)
run("unbalanced_c1_8", ub[ub$cluster %in% sprintf("c%03d", 1:8), ])
writeLines(capture.output(sessionInfo()), file.path(out, "sessionInfo.txt"))
