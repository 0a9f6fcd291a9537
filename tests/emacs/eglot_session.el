;;; eglot_session.el --- Emacs + eglot, no AgentLS plugin, against `agentls serve'  -*- lexical-binding: t -*-

;; Run by tests/emacs/test_eglot.py as `emacs --batch -l eglot_session.el'.  The model
;; behind the server is the scripted one (agentls.devtools.replay), not a real model.
;;
;; What a person does with docs/EDITORS.md's eglot setup: open a Python file, start eglot,
;; pick "AgentLS: Fix ..." in `eglot-code-actions', then ask with `agentls-chat'; eglot
;; applies each workspace/applyEdit (`eglot-confirm-server-initiated-edits' nil) and sends
;; the didChange from its idle timer.  The report (JSON, AGENTLS_EGLOT_OUT) says what
;; happened; the test judges it.
;;
;; Environment: AGENTLS_EGLOT_SERVER (JSON list: the server's command line),
;; AGENTLS_EGLOT_OPTIONS (JSON: initializationOptions), AGENTLS_EGLOT_FILE (the file to
;; open), AGENTLS_EGLOT_OUT (the report).  eglot's request timeout is its own (jsonrpc's
;; 10 s); the scripted chat takes longer than that.
;;
;; Behind a multiplexer (rassumfrassum, with a linter beside AgentLS), the linter publishes
;; the diagnostic: AGENTLS_EGLOT_LINTER=1 injects none; AGENTLS_EGLOT_FIXED (default
;; "a + b") is the text that shows the fix landed, AGENTLS_EGLOT_CHAT the chat's question.

(require 'package)
(package-initialize)  ; Debian's elpa-eglot lives in /usr/share/emacs/site-lisp/elpa
(require 'eglot)
(require 'cl-lib)
(require 'json)

(defun agentls-test--env (name)
  (or (getenv name) (error "%s is not set" name)))

(defun agentls-test--json (name &rest args)
  (apply #'json-parse-string (agentls-test--env name) args))

(defvar agentls-test--messages nil "window/showMessage texts, newest first.")
(defvar agentls-test--prompts nil "window/showMessageRequest texts, newest first.")
(defvar agentls-test--errors nil "Errors a step signalled (a timeout would be one).")
(defvar agentls-test--steps nil "What the session did, in order (newest first).")
(defvar agentls-test--linter (equal (getenv "AGENTLS_EGLOT_LINTER") "1")
  "A linter behind the same multiplexer publishes the diagnostics.")
(defvar agentls-test--chat (or (getenv "AGENTLS_EGLOT_CHAT") "Add a docstring to add()")
  "What the person asks with `agentls-chat'.")
(defvar agentls-test--fixed (or (getenv "AGENTLS_EGLOT_FIXED") "a + b")
  "Text in the buffer once the fix landed.")

(defun agentls-test--step (format &rest args)
  (let ((line (apply #'format format args)))
    (push line agentls-test--steps)
    (message "eglot session: %s" line)))

;; --- docs/EDITORS.md's setup -------------------------------------------------------------

(setq eglot-confirm-server-initiated-edits nil)
(add-to-list 'eglot-server-programs
             `(python-mode . (,@(agentls-test--json "AGENTLS_EGLOT_SERVER" :array-type 'list)
                              :initializationOptions
                              ,(agentls-test--json "AGENTLS_EGLOT_OPTIONS"
                                                   :object-type 'plist
                                                   :false-object :json-false
                                                   :null-object nil))))

(defun agentls-chat (prompt)
  "Ask AgentLS about the current file; its edit comes back through eglot."
  (interactive "sAgentLS: ")
  (eglot-execute-command
   (eglot--current-server-or-lose) 'agentls.chat
   (vector `(:prompt ,prompt :context ,(eglot--TextDocumentIdentifier)))))

;; --- What reaches the person ---------------------------------------------------------------

(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql window/showMessage)) &key type message)
  (push (format "%s: %s" type message) agentls-test--messages))

(cl-defmethod eglot-handle-request :around
  (_server (_method (eql window/showMessageRequest)) &key _type message _actions)
  ;; Batch Emacs has no one to answer: recorded and dismissed (the test expects none).
  (push message agentls-test--prompts)
  :null)

;; --- Helpers -------------------------------------------------------------------------------

(defun agentls-test--wait (what predicate seconds)
  "Serve the connection until PREDICATE holds, at most SECONDS; WHAT names it in errors."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall predicate)
        (progn (push (format "gave up waiting for %s" what) agentls-test--errors) nil))))

(defun agentls-test--go-idle (buffer)
  "What an interactive Emacs does 0.5 s after the last change: eglot's idle timer sends
the didChange.  Batch Emacs never goes idle, so its timer is run here."
  (with-current-buffer buffer
    (agentls-test--wait "eglot-send-changes-idle-time" (lambda () nil)
                        eglot-send-changes-idle-time)
    (pop agentls-test--errors)  ; that wait was meant to run out
    (when eglot--change-idle-timer
      (timer-event-handler eglot--change-idle-timer)
      (agentls-test--step "idle: eglot sent its didChange"))))

(defmacro agentls-test--guard (name &rest body)
  "Run BODY; an error is recorded under NAME rather than ending the session."
  (declare (indent 1))
  `(condition-case err
       (progn ,@body)
     (error (push (format "%s: %s" ,name (error-message-string err)) agentls-test--errors)
            nil)))

(defun agentls-test--records (server)
  "Per session: the `applied' of each run's edit as the server recorded it."
  (cl-loop
   for session across (plist-get (jsonrpc-request server :agentls/sessions '(:limit 20))
                                 :sessions)
   collect
   (list :session (plist-get session :id) :title (plist-get session :title)
         :applied
         (vconcat
          (cl-loop
           for m across (plist-get (jsonrpc-request
                                    server :agentls/history
                                    `(:sessionId ,(plist-get session :id)))
                                   :messages)
           for meta = (plist-get m :metadata)
           when (and (listp meta) (plist-member meta :applied))
           collect (let ((applied (plist-get meta :applied)))
                     (cond ((eq applied t) "applied")
                           ((eq applied :json-false)
                            (format "not applied: %s" (plist-get meta :failure_reason)))
                           (t "pending"))))))))

;; --- The session ---------------------------------------------------------------------------

(let* ((file (agentls-test--env "AGENTLS_EGLOT_FILE"))
       (buffer (find-file file))
       (report (agentls-test--env "AGENTLS_EGLOT_OUT"))
       server menu diagnostics)
  (with-current-buffer buffer
    (agentls-test--step "opened %s in %s" (file-name-nondirectory file) major-mode)
    (agentls-test--guard "eglot"
      (apply #'eglot (eglot--guess-contact))
      (agentls-test--wait "the server" (lambda () (eglot-current-server)) 30)
      (setq server (eglot-current-server)))
    (when server
      (agentls-test--step "eglot connected to %s" (plist-get (eglot--server-info server) :name))
      ;; A diagnostic on `return a - b', as a linter behind this server would publish it:
      ;; eglot sends only its own server's diagnostics with a code action request, and
      ;; AgentLS publishes none itself.
      (unless agentls-test--linter
        (eglot-handle-notification
         server 'textDocument/publishDiagnostics :uri (eglot--path-to-uri file)
         :diagnostics (vector '(:range (:start (:line 1 :character 11)
                                        :end (:line 1 :character 16))
                                :severity 1 :source "review" :message "add() subtracts"))))
      (flymake-start)
      (agentls-test--wait "flymake" (lambda () (flymake-diagnostics (point-min) (point-max))) 20)
      (setq diagnostics (mapcar (lambda (d) (format "%d: %s" (line-number-at-pos
                                                              (flymake-diagnostic-beg d))
                                                    (flymake-diagnostic-text d)))
                                (flymake-diagnostics (point-min) (point-max))))
      (agentls-test--step "flymake shows %S" diagnostics)
      ;; The person, on line 2, opens eglot's code action menu and picks the fix.
      (goto-char (point-min))
      (forward-line 1)
      (agentls-test--guard "code action"
        (cl-letf ((last-nonmenu-event ?\r)  ; invoked from the keyboard: a minibuffer menu
                  ((symbol-function 'completing-read)
                   (lambda (_prompt items &rest _)
                     (setq menu (mapcar #'car items))
                     (or (cl-find-if (lambda (title) (string-prefix-p "AgentLS: Fix" title))
                                     menu)
                         (error "no AgentLS: Fix action in %S" menu)))))
          (let ((started (float-time)))
            (eglot-code-actions (line-beginning-position) (line-end-position) nil t)
            (agentls-test--step "the Fix command returned after %.2f s"
                                (- (float-time) started)))))
      (when (agentls-test--wait "the fix" (lambda () (save-excursion
                                                         (goto-char (point-min))
                                                         (search-forward agentls-test--fixed
                                                                         nil t)))
                                30)
        (agentls-test--step "the fix is in the buffer")
        (agentls-test--go-idle buffer))
      ;; Then a question through the command, as `M-x agentls-chat' sends it.
      (agentls-test--guard "agentls-chat"
        (let* ((started (float-time))
               (answer (agentls-chat agentls-test--chat)))
          (agentls-test--step "agentls.chat returned after %.2f s: run %s"
                              (- (float-time) started) (plist-get answer :runId))))
      (when (agentls-test--wait "the chat's edit" (lambda () (save-excursion
                                                                 (goto-char (point-min))
                                                                 (search-forward "\"\"\"" nil t)))
                                30)
        (agentls-test--step "the chat's edit is in the buffer")
        (agentls-test--go-idle buffer))
      (agentls-test--wait "the chat's closing message"
                          (lambda () (cl-some (lambda (m) (string-match-p "Edit " m))
                                              agentls-test--messages))
                          30)
      (save-buffer)  ; the person saves what eglot applied
      (let ((text (buffer-substring-no-properties (point-min) (point-max))) records)
        (agentls-test--guard "records"
          (agentls-test--wait
           "the server's records"
           (lambda ()
             (setq records (agentls-test--records server))
             (and (>= (length records) 2)
                  (cl-every (lambda (r) (and (> (length (plist-get r :applied)) 0)
                                             (not (cl-find "pending" (plist-get r :applied)
                                                           :test #'equal))))
                            records)))
           10))
        (with-temp-file report
          (insert (json-serialize
                   (list :emacs emacs-version
                         :eglot (package-version-join (package-desc-version (cadr (assq (quote eglot) package-alist))))
                         :requestTimeout jsonrpc-default-request-timeout
                         :menu (vconcat menu)
                         :diagnostics (vconcat diagnostics)
                         :buffer text
                         :records (vconcat records)
                         :messages (vconcat (reverse agentls-test--messages))
                         :prompts (vconcat (reverse agentls-test--prompts))
                         :errors (vconcat (reverse agentls-test--errors))
                         :steps (vconcat (reverse agentls-test--steps))))))))
      (agentls-test--guard "shutdown" (eglot-shutdown server)))
    (unless (file-exists-p report)
      (with-temp-file report
        (insert (json-serialize
                 (list :errors (vconcat (reverse agentls-test--errors))
                       :steps (vconcat (reverse agentls-test--steps)))))))
    (kill-emacs 0)))

;;; eglot_session.el ends here
